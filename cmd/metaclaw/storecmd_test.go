package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/daemon"
	"github.com/metaclaw-go/metaclaw/host/store"
)

func TestStoreCLIStatsAndPrune(t *testing.T) {
	c := newSubCLI(t, "store")
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, daemon.PathsFor(c.home).DB)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-45 * 24 * time.Hour)
	for i := 0; i < 5; i++ {
		tr := &store.Turn{SessionID: "old", Agent: "a", TurnType: "side", ClientAPI: "openai", UpstreamAPI: "openai",
			RequestJSON: `{"messages":[]}`, ResponseText: strings.Repeat("z", 20000), Status: 200, CreatedAt: old}
		if err := st.RecordTurns(ctx, []*store.Turn{tr}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RecordTurns(ctx, []*store.Turn{{SessionID: "new", Agent: "a", TurnType: "main", ClientAPI: "openai", UpstreamAPI: "openai", RequestJSON: `{}`, Status: 200}}); err != nil {
		t.Fatal(err)
	}
	if err := st.EndSession(ctx, "old", "test", old); err != nil {
		t.Fatal(err)
	}
	st.Close()

	var stats struct {
		Stats      store.Stats       `json:"stats"`
		RetainDays int               `json:"retain_days"`
		Prunable   store.PruneReport `json:"prunable"`
	}
	c.jsonOut(&stats, "stats")
	if stats.Stats.Rows["turns"] != 6 || stats.RetainDays != 30 || stats.Prunable.Turns != 5 || stats.Stats.AutoVacuum != "incremental" {
		t.Fatalf("stats %+v", stats)
	}
	var dry struct {
		Prune store.PruneReport `json:"prune"`
	}
	c.jsonOut(&dry, "prune", "--dry-run")
	if !dry.Prune.DryRun || dry.Prune.Turns != 5 {
		t.Fatalf("dry run %+v", dry)
	}
	c.jsonOut(&stats, "stats")
	if stats.Stats.Rows["turns"] != 6 {
		t.Fatal("dry run deleted turns")
	}
	var done struct {
		Prune      store.PruneReport `json:"prune"`
		Freed      int64             `json:"pages_freed"`
		Before     int64             `json:"file_bytes_before"`
		After      int64             `json:"file_bytes_after"`
		AutoVacuum string            `json:"auto_vacuum"`
	}
	c.jsonOut(&done, "prune")
	if done.Prune.Turns != 5 || done.Prune.Sessions != 1 || done.Freed == 0 || done.After >= done.Before {
		t.Fatalf("prune %+v", done)
	}
	out := c.ok("stats")
	if !strings.Contains(out, "retention    30 days") || !strings.Contains(out, "turns ") {
		t.Fatalf("stats text:\n%s", out)
	}
	if _, _, err := c.run("prune", "--days", "0"); err == nil || !strings.Contains(err.Error(), "--days") {
		t.Fatalf("--days 0: %v", err)
	}
}
