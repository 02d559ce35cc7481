package skills

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/metaclaw-go/metaclaw/host/skills/bank"
)

func TestInstallBankNeverOverwritesUserEdits(t *testing.T) {
	lib, _ := newLib(t)
	ctx := context.Background()
	// The user already has a skill named like a bank skill.
	writeSkill(t, lib.Dir(), "email-drafting", skillFile("email-drafting", "My own way of writing emails", "1. Mine.", "source: user"))
	if _, err := lib.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := InstallBank(ctx, lib, bank.FS())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Installed) != len(bank.Names())-1 || res.Skipped["email-drafting"] == "" {
		t.Fatalf("first install: %d installed, skipped %v", len(res.Installed), res.Skipped)
	}
	if s, _ := lib.Get("email-drafting"); s.Body != "1. Mine." {
		t.Fatal("the user's skill was overwritten")
	}
	// Reinstalling changes nothing.
	res, err = InstallBank(ctx, lib, bank.FS())
	if err != nil || len(res.Installed)+len(res.Upgraded) != 0 || len(res.Unchanged) != len(bank.Names())-1 {
		t.Fatalf("reinstall: %+v %v", res, err)
	}
	// The user edits a bank skill; a new bank version does not touch it,
	// while an untouched bank skill is upgraded (generation bumped).
	edited, _ := lib.Get("sql-queries")
	if err := os.WriteFile(edited.Path, []byte(strings.Replace(mustRead(t, edited.Path), "# Writing SQL", "# Writing SQL (my notes)", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := lib.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	newBank := fstest.MapFS{}
	for _, n := range []string{"sql-queries", "regex-writing"} {
		raw := mustReadFS(t, n)
		newBank[n+"/SKILL.md"] = &fstest.MapFile{Data: []byte(strings.Replace(raw, "\n# ", "\n> Updated in bank v2.\n\n# ", 1))}
	}
	res, err = InstallBank(ctx, lib, newBank)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Upgraded) != 1 || res.Upgraded[0] != "regex-writing" || !strings.Contains(res.Skipped["sql-queries"], "edited") {
		t.Fatalf("upgrade: %+v", res)
	}
	if s, _ := lib.Get("sql-queries"); !strings.Contains(s.Body, "my notes") {
		t.Fatal("the user's edit was lost")
	}
	if s, _ := lib.Get("regex-writing"); s.Generation != 2 || !strings.Contains(s.Body, "bank v2") {
		t.Fatalf("regex-writing after upgrade: gen %d", s.Generation)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustReadFS(t *testing.T, name string) string {
	t.Helper()
	b, err := bank.FS().(interface{ ReadFile(string) ([]byte, error) }).ReadFile(name + "/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBankNeverSetUp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  bool
	}{
		{"missing dir", nil, true},
		{"empty dir", []string{}, true},
		{"only hidden files", []string{".trash/x"}, true},
		{"bank installed or declined", []string{bankManifest}, false},
		{"user skill", []string{"mine/SKILL.md"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "skills")
			if tc.files != nil {
				os.MkdirAll(dir, 0o700)
			}
			for _, f := range tc.files {
				p := filepath.Join(dir, f)
				os.MkdirAll(filepath.Dir(p), 0o700)
				os.WriteFile(p, []byte("x"), 0o600)
			}
			if got, err := BankNeverSetUp(dir); err != nil || got != tc.want {
				t.Fatalf("BankNeverSetUp = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	dir := filepath.Join(t.TempDir(), "skills")
	if err := DeclineBank(dir); err != nil {
		t.Fatal(err)
	}
	if fresh, _ := BankNeverSetUp(dir); fresh {
		t.Fatal("declined bank still counts as never set up")
	}
}
