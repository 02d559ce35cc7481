package plugin_test

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/onoff"
	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
	"github.com/metaclaw-go/metaclaw/plugin"
	"github.com/metaclaw-go/metaclaw/plugin/plugintest"
)

// serveRelay runs `plugin serve` over pipes with a given relay.
func serveRelay(t testing.TB, client string, relay *plugin.Relay) *served {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &served{relay: relay, done: make(chan struct{}), stdin: inW}
	go func() {
		defer close(s.done)
		_ = plugin.Serve(context.Background(), inR, outW, plugin.ServeOptions{Client: client, Relay: relay, Log: zerolog.Nop()})
		outW.Close()
	}()
	s.client = protocol.NewClient(outR, inW, inW, 0)
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			t.Error("plugin serve did not exit after stdin closed")
		}
	})
	return s
}

// TestDisabledPassesThrough: after `metaclaw disable` the OpenClaw hooks
// answer nothing, nothing is recorded or spooled, and `metaclaw enable`
// brings injection back.
func TestDisabledPassesThrough(t *testing.T) {
	home := plugintest.Home(t)
	h := plugintest.Start(t, home)
	if err := onoff.Disable(home); err != nil {
		t.Fatal(err)
	}
	relay := plugin.NewRelay(home, plugin.ClientOpenClaw, false, false, zerolog.Nop())
	relay.PassThrough = func() bool { return onoff.Disabled(home) } // no caching in the test
	s := serveRelay(t, plugin.ClientOpenClaw, relay)
	s.call(t, plugin.MethodInitialize, map[string]any{"client": "openclaw", "config": map[string]any{}}, nil)

	var ret map[string]string
	s.call(t, plugin.MethodOCBeforePromptBuild, example(t, "before_prompt_build.turn2"), &ret)
	if len(ret) != 0 || len(h.Provider.All()) != 0 {
		t.Fatalf("disabled, yet before_prompt_build returned %v (%d queries)", ret, len(h.Provider.All()))
	}
	s.call(t, plugin.MethodOCAgentEnd, example(t, "agent_end.turn2"), &ret)
	if turns := h.Turns(t, "fx-openai"); len(turns) != 0 || relay.Spool.Len() != 0 {
		t.Fatalf("disabled, yet %d turns recorded, %d spooled", len(turns), relay.Spool.Len())
	}

	if err := onoff.Enable(home); err != nil {
		t.Fatal(err)
	}
	s.call(t, plugin.MethodOCBeforePromptBuild, example(t, "before_prompt_build.turn2"), &ret)
	if ret["appendSystemContext"] == "" {
		t.Fatalf("enabled again, but no block: %v", ret)
	}
}

// TestDisabledNeverStartsTheHost: with no host running and the switch off,
// a hook does not start the host (as it does otherwise).
func TestDisabledNeverStartsTheHost(t *testing.T) {
	home := plugintest.Home(t)
	var starts atomic.Int32
	start := func(context.Context, string) error { starts.Add(1); return errors.New("not in this test") }
	relay := plugin.NewRelay(home, plugin.ClientOpenClaw, true, false, zerolog.Nop())
	relay.Host = plugin.NewHost(plugin.HostOptions{Home: home, AutoStart: true, Start: start, Log: zerolog.Nop()})
	relay.ContextTimeout = 500 * time.Millisecond

	onoff.Disable(home)
	relay.PassThrough = func() bool { return onoff.Disabled(home) }
	res := relay.Context(context.Background(), protocol.ContextParams{Identity: protocol.Identity{Session: "s"}, UserTexts: []string{"hi"}})
	if res.Skipped != plugin.SkippedDisabled || starts.Load() != 0 {
		t.Fatalf("disabled: %+v, %d starts", res, starts.Load())
	}
	onoff.Enable(home)
	relay.Context(context.Background(), protocol.ContextParams{Identity: protocol.Identity{Session: "s"}, UserTexts: []string{"hi"}})
	if starts.Load() == 0 {
		t.Fatal("enabled: the relay did not try to start the host (this test proves nothing)")
	}
}
