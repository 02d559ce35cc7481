package core

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Tool is an action the layer offers to agents (memory search/store/forget,
// skills search, …). Every surface that exposes tools — the OpenClaw shim's
// tools.list/tools.call over JSON-RPC, the MCP server — lists and calls these,
// so no surface has private tool logic.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"` // JSON Schema of the arguments object
	// Call runs the tool. caller says on whose behalf (agent, session, scope).
	Call func(ctx context.Context, caller Query, args json.RawMessage) (any, error) `json:"-"`
}

// The layer's tool names carry a "metaclaw_" prefix so they cannot collide
// with a client's own tools (OpenClaw's bundled memory-core plugin owns
// memory_search and memory_get, and OpenClaw drops a plugin tool whose name
// is taken).
const (
	ToolMemorySearch = "metaclaw_memory_search"
	ToolMemoryStore  = "metaclaw_memory_store"
	ToolMemoryForget = "metaclaw_memory_forget"
	ToolMemoryStatus = "metaclaw_memory_status"
	ToolSkillsSearch = "metaclaw_skills_search"
	ToolStatus       = "metaclaw_status"
	toolPrefix       = "metaclaw_"
)

// RegisterTool adds a tool; a later registration with the same name replaces it.
func (c *Core) RegisterTool(t Tool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tools == nil {
		c.tools = map[string]Tool{}
	}
	c.tools[t.Name] = t
}

// Tools lists the registered tools by name.
func (c *Core) Tools() []Tool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Tool, 0, len(c.tools))
	for _, t := range c.tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ErrUnknownTool is returned by CallTool for a name nobody registered.
type ErrUnknownTool struct{ Name string }

func (e ErrUnknownTool) Error() string { return fmt.Sprintf("unknown tool %q", e.Name) }

// CallTool runs a tool; a panicking tool returns an error instead of taking the host down.
func (c *Core) CallTool(ctx context.Context, name string, caller Query, args json.RawMessage) (result any, err error) {
	c.mu.RLock()
	t, ok := c.tools[name]
	if !ok && !strings.HasPrefix(name, toolPrefix) {
		// The unprefixed names of earlier versions (memory_search, …) still
		// call the tool: clients and caches that knew them keep working.
		t, ok = c.tools[toolPrefix+name]
	}
	c.mu.RUnlock()
	if !ok {
		return nil, ErrUnknownTool{Name: name}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool %s panicked: %v", name, r)
		}
	}()
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return t.Call(ctx, caller, args)
}
