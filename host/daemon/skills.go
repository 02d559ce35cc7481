package daemon

import (
	"context"
	"io"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/skills"
	"github.com/metaclaw-go/metaclaw/host/skills/bank"
)

// setupSkills assembles the skill library (host/skills) when skills.enabled:
// the "skills" context provider, the watcher that re-indexes SKILL.md edits
// (the returned closer stops it), the evolver when skills.auto_evolve, and
// the read-only /v1/skills routes. A skills dir never set up gets the
// built-in bank, as `metaclaw setup` would have installed.
func setupSkills(ctx context.Context, cfg *config.Config, st skills.Storage, c *core.Core, emb embed.Embedder, log zerolog.Logger) ([]route.Route, io.Closer, error) {
	if !cfg.Skills.Enabled {
		return nil, nil, nil
	}
	h, err := skills.Assemble(ctx, cfg, st, c, log.With().Str("part", "skills").Logger(), skills.AssembleOptions{Embedder: emb, FirstStartBank: bank.FS()})
	if err != nil {
		return nil, nil, err
	}
	return h.Routes, h, nil
}
