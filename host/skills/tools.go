package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/metaclaw-go/metaclaw/host/core"
)

// RegisterTools offers the library to agents through the core's tool
// registry (OpenClaw's tools, MCP): metaclaw_skills_search returns the skills that
// match a task, scoped to the calling agent, with their procedures.
func RegisterTools(c *core.Core, lib *Library, p *Provider) {
	c.RegisterTool(core.Tool{
		Name:        core.ToolSkillsSearch,
		Description: "Find the user's skills (step-by-step procedures MetaClaw learned or installed) relevant to a task. Returns name, description and body of the best matches.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what you are trying to do"},"limit":{"type":"integer","minimum":1,"maximum":10,"default":3}},"required":["query"],"additionalProperties":false}`),
		Call: func(ctx context.Context, caller core.Query, args json.RawMessage) (any, error) {
			var in struct {
				Query string `json:"query"`
				Limit int    `json:"limit"`
			}
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, fmt.Errorf("skills_search: arguments: %w", err)
			}
			if in.Query == "" {
				return nil, errors.New("skills_search: query is required")
			}
			if in.Limit <= 0 || in.Limit > 10 {
				in.Limit = 3
			}
			o := SearchOptions{Texts: []string{in.Query}, Agent: caller.Agent, Limit: in.Limit}
			if p != nil {
				o.Mode, o.Embedder = p.o.Mode, p.o.Embedder
			}
			hits, err := lib.Search(ctx, o)
			var semErr *SemanticError
			if err != nil && !errors.As(err, &semErr) {
				return nil, err
			}
			out := make([]map[string]any, 0, len(hits))
			for _, h := range hits {
				out = append(out, map[string]any{"name": h.Skill.Name, "description": h.Skill.Description, "body": h.Skill.Body, "score": h.Score})
			}
			return map[string]any{"skills": out}, nil
		},
	})
}
