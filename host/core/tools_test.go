package core

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// TestToolNamesAndAliases: the layer's tools carry the metaclaw_ prefix;
// the unprefixed names of earlier versions still reach them.
func TestToolNamesAndAliases(t *testing.T) {
	st, err := store.OpenSQLite(context.Background(), t.TempDir()+"/m.db")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := New(Options{Store: st, Log: zerolog.Nop()})
	defer c.Close()
	c.RegisterTool(Tool{Name: ToolMemorySearch, Call: func(context.Context, Query, json.RawMessage) (any, error) { return "found", nil }})
	c.RegisterTool(Tool{Name: "other_tool", Call: func(context.Context, Query, json.RawMessage) (any, error) { return "other", nil }})
	for _, name := range []string{ToolMemorySearch, "memory_search"} {
		if got, err := c.CallTool(context.Background(), name, Query{}, nil); err != nil || got != "found" {
			t.Fatalf("%s: %v %v", name, got, err)
		}
	}
	var unknown ErrUnknownTool
	if _, err := c.CallTool(context.Background(), "metaclaw_other_tool", Query{}, nil); !errors.As(err, &unknown) {
		t.Fatalf("a prefixed name is never mapped back: %v", err)
	}
	for _, n := range []string{ToolMemorySearch, ToolMemoryStore, ToolMemoryForget, ToolMemoryStatus, ToolSkillsSearch, ToolStatus} {
		if len(n) <= len(toolPrefix) || n[:len(toolPrefix)] != toolPrefix {
			t.Fatalf("tool %q lacks the prefix", n)
		}
	}
}
