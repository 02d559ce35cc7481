package adapters_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/adaptertest"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// fake is a minimal adapter: one JSON file at ~/fake.json gets "wired": <port>.
type fake struct{ extra string }

func (fake) Name() string { return "fake" }
func (f fake) Detect(env *adapters.Env, _ string) (*adapters.Detection, error) {
	p := filepath.Join(env.Home, "fake.json")
	return &adapters.Detection{Client: "fake", Found: env.Exists(p), ConfigPath: p, Version: "1", Default: []string{"main"}}, nil
}
func (f fake) Plan(env *adapters.Env, d *adapters.Detection, req *adapters.Request) (*adapters.Plan, error) {
	b, err := env.ReadFile(d.ConfigPath)
	if err != nil {
		return nil, err
	}
	doc, err := edit.ParseJSON(b)
	if err != nil {
		return nil, err
	}
	if err := doc.Set(edit.P("wired"), req.ProxyPort); err != nil {
		return nil, err
	}
	p := &adapters.Plan{Agents: []string{"main"}, Files: []*adapters.FileChange{{Path: d.ConfigPath, Format: "json", After: doc.Bytes()}},
		Expect: []adapters.Expect{{File: d.ConfigPath, Format: "json", Path: []any{"wired"}, Want: req.ProxyPort, What: "wired"}}}
	if f.extra != "" {
		p.Files = append(p.Files, &adapters.FileChange{Path: filepath.Join(env.Home, f.extra), Format: "raw", After: []byte("new\n"), Mode: 0o640})
	}
	return p, nil
}

func TestSymlinkedConfigStaysALink(t *testing.T) {
	w := adaptertest.NewWorld(t)
	target := w.Write("dotfiles/fake.json", "{\"a\": 1}\n")
	os.Chmod(target, 0o600)
	os.Symlink(target, filepath.Join(w.Home, "fake.json"))
	eng := w.Engine()
	if err := eng.Wire(context.Background(), fake{}, w.Request(), "", adapters.WireOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if l, err := os.Readlink(filepath.Join(w.Home, "fake.json")); err != nil || l != target {
		t.Fatalf("the symlink was replaced: %v %q", err, l)
	}
	b, _ := os.ReadFile(target)
	if string(b) != "{\n  \"a\": 1,\n  \"wired\": 30000\n}\n" && !strings.Contains(string(b), `"wired": 30000`) {
		t.Fatalf("target not edited: %s", b)
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode changed to %o", st.Mode().Perm())
	}
	if err := eng.Unwire(context.Background(), fake{}, adapters.UnwireOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "{\"a\": 1}\n" {
		t.Fatalf("not restored: %q", b)
	}
	if l, err := os.Readlink(filepath.Join(w.Home, "fake.json")); err != nil || l != target {
		t.Fatal("the symlink did not survive unwire")
	}
}

func TestManifestRecordsOriginalsAndHashes(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Write("fake.json", "{}\n")
	eng := w.Engine()
	if err := eng.Wire(context.Background(), fake{extra: "new/dir/extra.txt"}, w.Request(), "", adapters.WireOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	m, err := eng.Active("fake")
	if err != nil || m == nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(m.Dir(), "manifest.json"))
	var any map[string]any
	if err := json.Unmarshal(raw, &any); err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 2 || !m.Files[0].Existed || m.Files[1].Existed || m.Files[0].WrittenSHA256 == "" {
		t.Fatalf("manifest: %s", raw)
	}
	orig, _ := os.ReadFile(filepath.Join(m.Dir(), m.Files[0].Original))
	if string(orig) != "{}\n" {
		t.Fatalf("backup holds %q", orig)
	}
	if st, _ := os.Stat(filepath.Join(w.Home, "new/dir/extra.txt")); st.Mode().Perm() != 0o640 {
		t.Fatalf("new file mode %o", st.Mode().Perm())
	}
	if st, _ := os.Stat(m.Dir()); st.Mode().Perm() != 0o700 {
		t.Fatalf("backup dir mode %o", st.Mode().Perm())
	}
	// doctor sees the expectation hold, then break
	req := w.Request()
	f := eng.Doctor(context.Background(), []adapters.Adapter{fake{}}, adapters.DoctorInput{Request: req})
	okWired := false
	for _, x := range f {
		if x.What == "wired" && x.OK {
			okWired = true
		}
	}
	if !okWired {
		t.Fatalf("%+v", f)
	}
	os.WriteFile(filepath.Join(w.Home, "fake.json"), []byte(`{"wired": 1}`), 0o644)
	f = eng.Doctor(context.Background(), []adapters.Adapter{fake{}}, adapters.DoctorInput{Request: req})
	bad := false
	for _, x := range f {
		if strings.HasPrefix(x.What, "wired:") && !x.OK && strings.Contains(x.Fix, "metaclaw wire fake") {
			bad = true
		}
	}
	if !bad {
		t.Fatalf("%+v", f)
	}
	// unwire --force restores, removes the new file and the dirs metaclaw made
	if err := eng.Unwire(context.Background(), fake{}, adapters.UnwireOptions{}); err == nil {
		t.Fatal("unwire of an edited file did not refuse")
	}
	if err := eng.Unwire(context.Background(), fake{}, adapters.UnwireOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.Home, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("created dirs left: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(w.Home, "fake.json")); string(b) != "{}\n" {
		t.Fatalf("%q", b)
	}
}

func TestConfirmDeclined(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Write("fake.json", "{}\n")
	eng := w.Engine()
	eng.Confirm = adapters.PromptConfirm(strings.NewReader("no\n"), &w.Out)
	if err := eng.Wire(context.Background(), fake{}, w.Request(), "", adapters.WireOptions{}); err == nil {
		t.Fatal("applied without confirmation")
	}
	if b, _ := os.ReadFile(filepath.Join(w.Home, "fake.json")); string(b) != "{}\n" || w.Backups("fake") != 0 {
		t.Fatal("declined wire changed something")
	}
	eng.Confirm = adapters.PromptConfirm(strings.NewReader("y\n"), &w.Out)
	if err := eng.Wire(context.Background(), fake{}, w.Request(), "", adapters.WireOptions{}); err != nil {
		t.Fatal(err)
	}
}
