package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/internal/testwait"
	"github.com/metaclaw-go/metaclaw/plugin/plugintest"
)

func mcpSession(t *testing.T, home string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(binary(t), "mcp", "--no-start", "--agent", "main")
	cmd.Env = pluginEnv(home)
	client := mcp.NewClient(&mcp.Implementation{Name: "metaclaw-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 3 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return strings.Join(names, ",")
}

// TestMCPServer drives `metaclaw mcp` with the official go-sdk client: the
// core's tools are listed and called through the host, and the list follows
// the host's registrations.
func TestMCPServer(t *testing.T) {
	home := plugintest.Home(t)
	h := plugintest.Start(t, home)
	var changed atomic.Int32
	cs := mcpSession(t, home, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed.Add(1) }})

	if got := toolNames(t, cs); got != "metaclaw_memory_search,metaclaw_status" {
		t.Fatalf("tools %q", got)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: core.ToolMemorySearch, Arguments: map[string]any{"query": "genmaicha"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, plugintest.Memory) || !strings.Contains(text, `"agent": "main"`) {
		t.Fatalf("memory_search returned %s", text)
	}
	if sc, _ := res.StructuredContent.(map[string]any); sc == nil {
		t.Fatalf("no structured content: %+v", res)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "metaclaw_status"})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "rpc") {
		t.Fatalf("status: %v %+v", err, res)
	}

	// A tool registered later (memory/skills engineers' tools) shows up.
	h.Core.RegisterTool(core.Tool{Name: core.ToolSkillsSearch, Description: "Find skills.", InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`),
		Call: func(ctx context.Context, q core.Query, a json.RawMessage) (any, error) { return "no skills yet", nil }})
	h.Core.RegisterTool(core.Tool{Name: "broken", Description: "fails", InputSchema: json.RawMessage(`"not a schema"`),
		Call: func(ctx context.Context, q core.Query, a json.RawMessage) (any, error) { panic("broken tool") }})
	if got := toolNames(t, cs); got != "broken,metaclaw_memory_search,metaclaw_skills_search,metaclaw_status" {
		t.Fatalf("tools after registration %q", got)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: core.ToolSkillsSearch, Arguments: map[string]any{"query": "x"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "no skills yet" {
		t.Fatalf("skills_search: %v %+v", err, res)
	}
	// A failing tool is an MCP tool error, not a dead server.
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "broken"})
	if err != nil || !res.IsError {
		t.Fatalf("broken tool: %v %+v", err, res)
	}
	testwait.For(t, "the tools/list_changed notification", func() bool { return changed.Load() != 0 })
	// The host goes away: calls fail as tool errors, the server stays up.
	h.Stop()
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: core.ToolMemorySearch, Arguments: map[string]any{"query": "x"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "unavailable") {
		t.Fatalf("call without host: %v %+v", err, res)
	}
	if got := toolNames(t, cs); got == "" {
		t.Fatal("tool list emptied while the host is down")
	}
}
