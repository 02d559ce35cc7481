package daemon

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/store"
)

func TestSetupSkills(t *testing.T) {
	home := t.TempDir()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(home, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := core.New(core.Options{Store: st, Log: zerolog.Nop()})
	defer c.Close()

	cfg := config.Default(home)
	cfg.Skills.Enabled = false
	routes, closer, err := setupSkills(context.Background(), cfg, st, c, nil, zerolog.Nop())
	if err != nil || routes != nil || closer != nil {
		t.Fatalf("disabled: %v %v %v", routes, closer, err)
	}

	cfg.Skills.Enabled = true
	cfg.Skills.AutoEvolve = true // no LLM configured: evolution is off, injection still works
	routes, closer, err = setupSkills(context.Background(), cfg, st, c, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if len(routes) != 5 || routes[0].Pattern != "GET /v1/skills" {
		t.Fatalf("routes = %+v", routes)
	}
	stats, err := c.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(stats.Providers, "skills") {
		t.Fatalf("providers = %v", stats.Providers)
	}
	if _, ok := stats.Learned["skills"]; !ok {
		t.Fatalf("learned = %v", stats.Learned)
	}
	if learningParts[0] == nil {
		t.Fatal("no learning parts")
	}
}
