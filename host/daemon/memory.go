package daemon

import (
	"context"
	"io"
	"os"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/memory"
	"github.com/metaclaw-go/metaclaw/host/route"
)

// setupMemory assembles the memory layer (host/memory): the "memory" provider,
// ingestion every memory.ingest_every_turns main turns and at session end,
// the memory_* tools and the /v1/memory/… routes. Its closer ingests what is
// still pending at shutdown. With memory.sidecar_url the provider, ingestion
// and routes use that host's memory; METACLAW_MEMORY_SIDECAR_KEY (default
// proxy.api_key) authenticates to it; memory.sidecar_api_key wins when set.
func setupMemory(ctx context.Context, cfg *config.Config, st memory.Storage, c *core.Core, emb embed.Embedder, log zerolog.Logger) ([]route.Route, io.Closer, error) {
	key := cfg.Memory.SidecarAPIKey
	if key == "" {
		key = os.Getenv("METACLAW_MEMORY_SIDECAR_KEY")
	}
	h, err := memory.Assemble(ctx, cfg, st, c, log.With().Str("part", "memory").Logger(), memory.AssembleOptions{
		SidecarKey: key,
		Embedder:   emb,
	})
	if err != nil {
		return nil, nil, err
	}
	return h.Routes, h, nil
}
