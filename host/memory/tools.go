package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/core"
)

// The agent-facing tools (core.RegisterTool): every surface that offers tools
// (the OpenClaw shim over JSON-RPC, the MCP server) lists and calls these.
// A tool acts for its caller: it sees the caller's scope, the scope's shared
// units and the calling agent's own.

// toolBackend is what the tools need: the local store or a remote memory.
type toolBackend interface {
	search(ctx context.Context, caller core.Query, query string, limit int) ([]SearchResult, error)
	store(ctx context.Context, caller core.Query, req StoreRequest) (map[string]any, error)
	forget(ctx context.Context, caller core.Query, id string) error
	status(ctx context.Context) (map[string]any, error)
}

func callerAgent(q core.Query) string {
	if q.Agent == "" {
		return "default"
	}
	return q.Agent
}

// registerTools adds metaclaw_memory_search, _store, _forget and _status
// to the core.
func registerTools(c *core.Core, b toolBackend) {
	c.RegisterTool(core.Tool{
		Name:        core.ToolMemorySearch,
		Description: "Search the user's long-term memory (preferences, facts, project state, past sessions). Returns the best matches with their ids.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},"limit":{"type":"integer","minimum":1,"maximum":50,"default":10}},"required":["query"]}`),
		Call: func(ctx context.Context, caller core.Query, args json.RawMessage) (any, error) {
			var a struct {
				Query string `json:"query"`
				Limit int    `json:"limit"`
			}
			if err := json.Unmarshal(args, &a); err != nil {
				return nil, fmt.Errorf("memory_search: %w", err)
			}
			if strings.TrimSpace(a.Query) == "" {
				return nil, errors.New("memory_search: query is required")
			}
			if a.Limit <= 0 || a.Limit > 50 {
				a.Limit = 10
			}
			res, err := b.search(ctx, caller, a.Query, a.Limit)
			if err != nil {
				return nil, err
			}
			return map[string]any{"results": res}, nil
		},
	})
	c.RegisterTool(core.Tool{
		Name:        core.ToolMemoryStore,
		Description: "Remember something about the user for future sessions (a preference, rule, fact or project detail). A repeat strengthens the existing memory; a changed preference replaces the old one.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"content":{"type":"string","description":"one fact, as a short sentence"},"memory_type":{"type":"string","enum":["preference","semantic","project_state","episodic"]},"tags":{"type":"array","items":{"type":"string"}},"importance":{"type":"number","minimum":0,"maximum":1}},"required":["content"]}`),
		Call: func(ctx context.Context, caller core.Query, args json.RawMessage) (any, error) {
			var req StoreRequest
			if err := json.Unmarshal(args, &req); err != nil {
				return nil, fmt.Errorf("memory_store: %w", err)
			}
			if strings.TrimSpace(req.Content) == "" {
				return nil, errors.New("memory_store: content is required")
			}
			if req.MemoryType != "" {
				if _, err := ParseType(req.MemoryType); err != nil {
					return nil, fmt.Errorf("memory_store: %w", err)
				}
			}
			req.ScopeID, req.Agent = caller.Scope.Key(), ""
			return b.store(ctx, caller, req)
		},
	})
	c.RegisterTool(core.Tool{
		Name:        core.ToolMemoryForget,
		Description: "Forget a memory for good, by the id metaclaw_memory_search returned.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"memory_id":{"type":"string"}},"required":["memory_id"]}`),
		Call: func(ctx context.Context, caller core.Query, args json.RawMessage) (any, error) {
			var a struct {
				MemoryID string `json:"memory_id"`
			}
			if err := json.Unmarshal(args, &a); err != nil {
				return nil, fmt.Errorf("memory_forget: %w", err)
			}
			if err := b.forget(ctx, caller, a.MemoryID); err != nil {
				return nil, err
			}
			return map[string]any{"ok": true, "memory_id": a.MemoryID}, nil
		},
	})
	c.RegisterTool(core.Tool{
		Name:        core.ToolMemoryStatus,
		Description: "How many memories MetaClaw holds and how many recorded turns wait to be learned from.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		Call: func(ctx context.Context, _ core.Query, _ json.RawMessage) (any, error) {
			return b.status(ctx)
		},
	})
}

// ---- local ----

type localTools struct {
	s  *Store
	in *Ingester
}

func (l localTools) search(ctx context.Context, caller core.Query, query string, limit int) ([]SearchResult, error) {
	hits, err := l.s.Search(ctx, SearchQuery{Scope: caller.Scope.Key(), Agent: callerAgent(caller), Text: query, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]SearchResult, 0, len(hits))
	for _, h := range hits {
		out = append(out, SearchResult{MemoryID: h.ID, Type: h.Type, Score: h.Score, Content: h.Content, Importance: h.Importance,
			Mentions: h.Mentions, AccessCount: h.InjectedCount, MatchedTerms: h.Matched, Scope: h.Scope, Agent: h.Agent, CreatedAt: h.CreatedAt})
	}
	return out, nil
}

func (l localTools) store(ctx context.Context, _ core.Query, req StoreRequest) (map[string]any, error) {
	var typ Type
	if req.MemoryType != "" {
		typ, _ = ParseType(req.MemoryType)
	}
	u, outcome, err := l.s.Add(ctx, NewUnit{Content: req.Content, Type: typ, Scope: req.ScopeID, Importance: req.Importance, Tags: req.Tags, Origin: "tool"})
	if err != nil {
		return nil, err
	}
	return map[string]any{"memory_id": u.ID, "outcome": outcome}, nil
}

// forget only reaches units the caller can see.
func (l localTools) forget(ctx context.Context, caller core.Query, id string) error {
	u, err := l.s.Get(ctx, id)
	if err != nil {
		return err
	}
	if u.Scope != l.s.ScopeKey(caller.Scope.Key()) || u.Agent != "" && u.Agent != callerAgent(caller) {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return l.s.Forget(ctx, u.ID, "tool")
}

func (l localTools) status(ctx context.Context) (map[string]any, error) {
	n, err := l.s.ActiveCount(ctx)
	if err != nil {
		return nil, err
	}
	p, err := l.in.Pending(ctx)
	if err != nil {
		return nil, err
	}
	refused, err := l.s.RefusedCount(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"memories": n, "pending_turns": p, "refused": refused}, nil
}

// ---- remote ----

type remoteTools struct {
	r  *Remote
	in *Ingester
}

func (t remoteTools) search(ctx context.Context, caller core.Query, query string, limit int) ([]SearchResult, error) {
	var out struct {
		Results []SearchResult `json:"results"`
	}
	err := t.r.call(ctx, http.MethodPost, "/v1/memory/search", SearchRequest{Query: query, ScopeID: caller.Scope.Key(), Agent: callerAgent(caller), Limit: limit}, &out)
	return out.Results, err
}

func (t remoteTools) store(ctx context.Context, _ core.Query, req StoreRequest) (map[string]any, error) {
	var out map[string]any
	err := t.r.call(ctx, http.MethodPost, "/v1/memory/store", req, &out)
	return out, err
}

func (t remoteTools) forget(ctx context.Context, caller core.Query, id string) error {
	var got struct {
		Memory Unit `json:"memory"`
	}
	if err := t.r.call(ctx, http.MethodGet, "/v1/memory/"+id, nil, &got); err != nil {
		return err
	}
	if got.Memory.Scope != caller.Scope.Key() && !(caller.Scope.Key() == "default") || got.Memory.Agent != "" && got.Memory.Agent != callerAgent(caller) {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return t.r.call(ctx, http.MethodPost, "/v1/memory/forget", map[string]string{"memory_id": id, "reason": "tool"}, nil)
}

func (t remoteTools) status(ctx context.Context) (map[string]any, error) {
	st, err := t.r.Status(ctx)
	if err != nil {
		return nil, err
	}
	p, err := t.in.Pending(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"memories": st.Memories, "pending_turns": p, "refused": st.Refused}, nil
}
