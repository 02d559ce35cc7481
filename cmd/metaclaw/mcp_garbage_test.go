package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/plugin/plugintest"
)

// mcpGarbage is what issue 11 sent to `metaclaw mcp`, plus its relatives:
// each line must get a JSON-RPC error and leave the server answering.
func mcpGarbage() []struct{ name, line string } {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	return []struct{ name, line string }{
		{"not JSON", "this is not json"},
		{"batch", "[1,2]"},
		{"NUL", "\x00"},
		{"NUL inside a request", "{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"ping\"\x00}"},
		{"invalid UTF-8", "\xff\xfe\xfd"},
		{"10,000-deep nesting", deep(10000)},
		{"10,000-deep params", `{"jsonrpc":"2.0","id":78,"method":"ping","params":` + deep(10000) + `}`},
		{"100,000-deep nesting", deep(100000)},
		{"50 MB line", `{"jsonrpc":"2.0","id":79,"method":"ping","params":{"x":"` + strings.Repeat("a", 50<<20) + `"}}`},
		{"bare string", `"hello"`},
		{"number", `42`},
		{"null", `null`},
		{"empty object", `{}`},
		{"float id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`},
		{"wrong version", `{"jsonrpc":"1.0","id":80,"method":"ping"}`},
		{"params a string", `{"jsonrpc":"2.0","id":81,"method":"tools/call","params":"x"}`},
		{"method a number", `{"jsonrpc":"2.0","id":82,"method":7}`},
		{"unknown method", `{"jsonrpc":"2.0","id":83,"method":"no/such/method"}`},
		{"truncated", `{"jsonrpc":"2.0","id":84,"method":"pi`},
	}
}

// TestMCPSurvivesGarbage feeds the garbage corpus to the real `metaclaw mcp`
// over pipes, each line followed by a ping: every bad line is answered with
// a JSON-RPC error, every ping with a result, and the session still lists
// tools at the end.
func TestMCPSurvivesGarbage(t *testing.T) {
	home := plugintest.Home(t)
	plugintest.Start(t, home)
	cmd := exec.Command(binary(t), "mcp", "--no-start", "--agent", "main")
	cmd.Env = pluginEnv(home)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan map[string]any, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"unparseable": sc.Text()}
			}
			lines <- m
		}
		close(lines)
	}()
	send := func(s string) {
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatalf("write: %v (the server died)", err)
		}
	}
	// await reads answers until the one with id; it returns the others.
	await := func(id float64) (map[string]any, []map[string]any) {
		var others []map[string]any
		timeout := time.After(60 * time.Second)
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("stdout closed (the server exited); before: %v", others)
				}
				if got, _ := m["id"].(float64); got == id && m["id"] != nil {
					return m, others
				}
				others = append(others, m)
			case <-timeout:
				t.Fatalf("no answer with id %v; got %v", id, others)
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"garbage","version":"1"}}}`)
	if m, _ := await(1); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	for i, g := range mcpGarbage() {
		send(g.line)
		pingID := float64(1000 + i)
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, int(pingID)))
		pong, before := await(pingID)
		if pong["result"] == nil {
			t.Fatalf("%s: ping after it: %v", g.name, pong)
		}
		errs := 0
		for _, m := range before {
			if e, ok := m["error"].(map[string]any); ok && e["code"] != nil && e["message"] != "" {
				errs++
			}
		}
		if errs != 1 || len(before) != 1 {
			t.Fatalf("%s: want exactly one JSON-RPC error before the ping's answer, got %v", g.name, before)
		}
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m, _ := await(2); !strings.Contains(fmt.Sprint(m["result"]), "memory_search") {
		t.Fatalf("tools/list after the garbage: %v", m)
	}
}
