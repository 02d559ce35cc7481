package skills

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/core"
)

func writeSkill(t testing.TB, dir, folder, content string) string {
	t.Helper()
	p := filepath.Join(dir, folder, FileName)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func skillFile(name, desc, body string, extra ...string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n" + strings.Join(extra, "\n") + "\n---\n\n" + body + "\n"
}

func TestSyncSkipsMalformedFilesAndIndexes(t *testing.T) {
	lib, st := newLib(t)
	ctx := context.Background()
	dir := lib.Dir()
	writeSkill(t, dir, "good", skillFile("good", "Use when testing good things", "1. Do the good thing."))
	bad := writeSkill(t, dir, "bad", "---\nname: bad\n---\nno description")
	writeSkill(t, dir, "twin", skillFile("good", "Same name again", "x"))
	writeSkill(t, dir, "other-folder", skillFile("renamed", "Folder differs from name", "y"))
	writeSkill(t, dir, ".hidden", skillFile("hidden", "never loaded", "z"))
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("not a skill"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := lib.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Loaded != 2 {
		t.Fatalf("loaded %d skills, want 2 (good, renamed): %+v", rep.Loaded, rep)
	}
	var fatal, warn []Problem
	for _, p := range lib.Problems() {
		if p.Fatal {
			fatal = append(fatal, p)
		} else {
			warn = append(warn, p)
		}
	}
	if len(fatal) != 2 || fatal[0].Path != bad || !strings.Contains(fatal[0].Reason, "no description") || !strings.Contains(fatal[1].Reason, "duplicate name") {
		t.Fatalf("fatal problems = %+v", fatal)
	}
	if len(warn) != 1 || !strings.Contains(warn[0].Reason, "differs from name") {
		t.Fatalf("warnings = %+v", warn)
	}
	var n int
	if err := st.Reader().QueryRow(`SELECT COUNT(*) FROM skills_fts WHERE skills_fts MATCH '"good"'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("FTS rows for good = %d, %v", n, err)
	}
	// A second sync with nothing changed writes nothing.
	rep, err = lib.Sync(ctx)
	if err != nil || rep.Added+rep.Updated+rep.Removed != 0 {
		t.Fatalf("idle sync changed the index: %+v %v", rep, err)
	}
}

func TestHotReload(t *testing.T) {
	lib, _ := newLib(t)
	w, err := lib.Watch(WatchOptions{Debounce: 30 * time.Millisecond, Rescan: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p := NewProvider(lib, ProviderOptions{TopK: 6, MaxTokens: 1500})
	ctx := context.Background()
	ask := func(text string) []string {
		sec, err := p.Context(ctx, core.Query{Agent: "default", UserTexts: []string{text}})
		if err != nil {
			t.Fatal(err)
		}
		return sec.IDs
	}
	has := func(ids []string, id string) bool {
		for _, x := range ids {
			if x == id {
				return true
			}
		}
		return false
	}

	// Write: a new folder and file appear.
	path := writeSkill(t, lib.Dir(), "kubectl-rollout", skillFile("kubectl-rollout", "Use when a kubernetes rollout is stuck", "1. kubectl rollout status deploy/x"))
	eventually(t, "the new skill to be injected", func() bool { return has(ask("my kubernetes rollout is stuck"), "skill:kubectl-rollout@1") })

	// Modify: new content and generation are picked up.
	if err := os.WriteFile(path, []byte(skillFile("kubectl-rollout", "Use when a kubernetes rollout hangs or a canary misbehaves", "1. kubectl rollout undo", "generation: 2")), 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the edit to be injected", func() bool { return has(ask("the canary misbehaves"), "skill:kubectl-rollout@2") })

	// A malformed edit is reported and the skill drops out; fixing it brings it back.
	if err := os.WriteFile(path, []byte("---\nname: kubectl-rollout\n---\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the broken file to be reported", func() bool {
		for _, pr := range lib.Problems() {
			if pr.Path == path && pr.Fatal {
				return true
			}
		}
		return false
	})
	if _, ok := lib.Get("kubectl-rollout"); ok {
		t.Fatal("a skill whose file no longer parses must not be served")
	}
	if err := os.WriteFile(path, []byte(skillFile("kubectl-rollout", "Use when a kubernetes rollout is stuck", "1. check events", "generation: 3")), 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the fixed skill to come back", func() bool { return has(ask("kubernetes rollout stuck"), "skill:kubectl-rollout@3") })

	// Delete: it leaves the index.
	if err := os.RemoveAll(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted skill to leave", func() bool {
		_, ok := lib.Get("kubectl-rollout")
		return !ok && len(ask("kubernetes rollout stuck")) == 0
	})

	// Every version seen is in the history, newest first.
	hist, err := lib.History(ctx, "kubectl-rollout", 10, false)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, h := range hist {
		actions = append(actions, h.Action)
	}
	if got := strings.Join(actions, ","); !strings.HasPrefix(got, "removed,") || !strings.HasSuffix(got, ",indexed") || !strings.Contains(got, "file-edit") {
		t.Fatalf("history actions = %s", got)
	}
}

func TestSaveUpdateApproveRejectRemove(t *testing.T) {
	lib, _ := newLib(t)
	ctx := context.Background()
	s := &Skill{Name: "pending-one", Description: "Use when reviewing a pending skill", Body: "1. Review.", Status: StatusPending, Source: "evolver"}
	if _, err := lib.Save(ctx, s, Event{Action: "proposed", Source: "evolver"}); err != nil {
		t.Fatal(err)
	}
	if lib.ActiveCount() != 0 {
		t.Fatal("a pending skill is not active")
	}
	got, err := lib.Approve(ctx, "pending-one", Event{Source: "cli"})
	if err != nil || got.Status != StatusActive || lib.ActiveCount() != 1 {
		t.Fatalf("approve: %+v %v", got, err)
	}
	if _, err := lib.Approve(ctx, "pending-one", Event{}); err == nil {
		t.Fatal("approving an active skill without a proposal must fail")
	}

	// A proposed edit waits beside the live skill; approving it bumps the generation.
	next := got.Clone()
	next.Body, next.Generation = "1. Review twice.", got.Generation+1
	if err := lib.SaveProposal(ctx, next, Event{Action: "proposed", Source: "evolver"}); err != nil {
		t.Fatal(err)
	}
	live, _ := lib.Get("pending-one")
	if live.Body != "1. Review." || !live.HasProposal {
		t.Fatalf("live skill changed before approval: %+v", live)
	}
	approved, err := lib.Approve(ctx, "pending-one", Event{Source: "cli"})
	if err != nil || approved.Body != "1. Review twice." || approved.Generation != 2 || approved.Status != StatusActive {
		t.Fatalf("approve edit: %+v %v", approved, err)
	}
	if live, _ := lib.Get("pending-one"); live.HasProposal {
		t.Fatal("PROPOSED.md should be gone after approval")
	}

	// Rejecting a proposed edit keeps the live skill.
	next = approved.Clone()
	next.Body = "1. Something worse."
	if err := lib.SaveProposal(ctx, next, Event{Action: "proposed"}); err != nil {
		t.Fatal(err)
	}
	if err := lib.Reject(ctx, "pending-one", "worse", Event{Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	if live, _ := lib.Get("pending-one"); live.Body != "1. Review twice." || live.HasProposal {
		t.Fatalf("after reject: %+v", live)
	}

	// Disable, enable.
	if s, err := lib.SetStatus(ctx, "pending-one", StatusDisabled, Event{Source: "cli"}); err != nil || s.Status != StatusDisabled || lib.ActiveCount() != 0 {
		t.Fatalf("disable: %+v %v", s, err)
	}
	if _, err := lib.SetStatus(ctx, "pending-one", StatusActive, Event{Source: "cli"}); err != nil || lib.ActiveCount() != 1 {
		t.Fatalf("enable: %v", err)
	}

	// Remove moves to the trash.
	dest, err := lib.Remove(ctx, "pending-one", Event{Source: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dest, FileName)); err != nil || !strings.Contains(dest, ".trash") {
		t.Fatalf("trash copy: %s %v", dest, err)
	}
	if _, ok := lib.Get("pending-one"); ok {
		t.Fatal("removed skill still loaded")
	}
	hist, _ := lib.History(ctx, "pending-one", 50, true)
	var actions []string
	for _, h := range hist {
		actions = append(actions, h.Action)
	}
	want := "removed,enabled,disabled,rejected,proposed,approved,proposed,approved,proposed"
	if got := strings.Join(actions, ","); got != want {
		t.Fatalf("history = %s\nwant      %s", got, want)
	}

	// Names cannot escape the folder.
	if _, err := lib.Save(ctx, &Skill{Name: "../evil", Description: "x"}, Event{}); err == nil {
		t.Fatal("a path-like name must be refused")
	}
}
