package adapters

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/titanous/json5"
	"go.yaml.in/yaml/v3"

	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// Engine applies plans: it prints the diff, asks, backs up, writes
// atomically, verifies and records a manifest; and it restores.
type Engine struct {
	Env     *Env
	Out     io.Writer         // diffs, progress
	Confirm func(string) bool // nil: refuse unless Yes
	Version string            // metaclaw version, recorded in manifests
}

// WireOptions are the flags of `metaclaw wire`.
type WireOptions struct {
	DryRun    bool
	Yes       bool
	Force     bool // rebuild from the originals even if wired files were edited since
	NoRestart bool
}

// Manifest records one wiring of one client: what was changed and how to
// undo it. It lives in $METACLAW_HOME/backups/<client>/<timestamp>/manifest.json
// next to the original bytes of every file.
type Manifest struct {
	Format        int               `json:"format"`
	Client        string            `json:"client"`
	State         string            `json:"state"` // wired | unwired
	CreatedAt     time.Time         `json:"created_at"`
	UpdatedAt     time.Time         `json:"updated_at"`
	UnwiredAt     *time.Time        `json:"unwired_at,omitempty"`
	Metaclaw      string            `json:"metaclaw_version,omitempty"`
	ClientVersion string            `json:"client_version,omitempty"`
	ConfigPath    string            `json:"config_path,omitempty"`
	Agents        []string          `json:"agents"`
	Via           Via               `json:"via"`
	URLs          map[string]string `json:"urls,omitempty"`
	Sandbox       bool              `json:"sandbox,omitempty"`
	Files         []*ManifestFile   `json:"files"`
	Dirs          []string          `json:"created_dirs,omitempty"`
	SetupHash     string            `json:"setup_hash,omitempty"`
	Undo          []Command         `json:"undo,omitempty"`
	Restart       []Command         `json:"restart,omitempty"`
	Expect        []Expect          `json:"expect,omitempty"`

	dir string
}

// ManifestFile is one file metaclaw changed.
type ManifestFile struct {
	Path           string `json:"path"`
	Existed        bool   `json:"existed"`
	Mode           uint32 `json:"mode,omitempty"`
	Original       string `json:"original,omitempty"` // file in the backup dir
	OriginalSHA256 string `json:"original_sha256,omitempty"`
	WrittenSHA256  string `json:"written_sha256"`
	Owned          bool   `json:"owned,omitempty"`
	Link           string `json:"link,omitempty"`          // metaclaw wrote a symlink to this target
	OriginalLink   string `json:"original_link,omitempty"` // the original was a symlink to this target
	Format         string `json:"format,omitempty"`
}

// Dir is the backup directory of the manifest.
func (m *Manifest) Dir() string { return m.dir }

func (e *Engine) out() io.Writer {
	if e.Out == nil {
		return io.Discard
	}
	return e.Out
}

func (e *Engine) backupRoot(client string) string {
	return filepath.Join(e.Env.MetaclawHome, "backups", client)
}

// Active returns the manifest of the current wiring of client, or nil.
func (e *Engine) Active(client string) (*Manifest, error) {
	root := e.backupRoot(client)
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, d := range ents {
		if d.IsDir() {
			names = append(names, d.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	for _, n := range names {
		m, err := readManifest(filepath.Join(root, n))
		if err != nil {
			continue
		}
		if m.State == "wired" {
			return m, nil
		}
	}
	return nil, nil
}

// Wired lists the manifests of every wired client.
func (e *Engine) Wired() ([]*Manifest, error) {
	ents, err := os.ReadDir(filepath.Join(e.Env.MetaclawHome, "backups"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Manifest
	for _, d := range ents {
		if !d.IsDir() {
			continue
		}
		m, err := e.Active(d.Name())
		if err != nil {
			return nil, err
		}
		if m != nil {
			out = append(out, m)
		}
	}
	return out, nil
}

func readManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "manifest.json"), err)
	}
	m.dir = dir
	return &m, nil
}

func (m *Manifest) save() error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return WriteAtomic(filepath.Join(m.dir, "manifest.json"), append(b, '\n'), 0o600)
}

func (m *Manifest) file(path string) *ManifestFile {
	for _, f := range m.Files {
		if f.Path == path {
			return f
		}
	}
	return nil
}

// original returns the bytes of f before wiring (nil if it did not exist);
// an original symlink reads as "link:<target>", like current.
func (m *Manifest) original(f *ManifestFile) ([]byte, error) {
	if !f.Existed {
		return nil, nil
	}
	if f.OriginalLink != "" {
		return []byte("link:" + f.OriginalLink), nil
	}
	return os.ReadFile(filepath.Join(m.dir, f.Original))
}

// restoreFile puts f's original back.
func (m *Manifest) restoreFile(f *ManifestFile) error {
	if f.OriginalLink != "" {
		return apply(f.Path, nil, 0, f.OriginalLink)
	}
	orig, err := m.original(f)
	if err != nil {
		return err
	}
	return apply(f.Path, orig, fs.FileMode(f.Mode), "")
}

// realPath resolves a symlinked config file to its target, so a dotfile
// manager's link stays a link.
func realPath(p string) string {
	p = filepath.Clean(p)
	if st, err := os.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		if t, err := filepath.EvalSymlinks(p); err == nil {
			return t
		}
	}
	return p
}

// current reads what is on disk now (nil, nil when absent); a symlink reads
// as "link:<target>".
func current(path string) ([]byte, error) {
	if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		t, err := os.Readlink(path)
		if err != nil {
			return nil, err
		}
		return []byte("link:" + t), nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

func sum(b []byte) string {
	if b == nil {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// change is one file's transition in this run.
type change struct {
	path    string
	mode    fs.FileMode // of the file on disk now
	before  []byte      // on disk now (nil: absent)
	after   []byte      // target (nil: remove)
	fc      *FileChange
	restore *ManifestFile // restoring an original (file no longer in the plan)
}

// Edited describes wired files that changed on disk since metaclaw wrote them.
type EditedError struct {
	Client string
	Files  []string
	Verb   string // wire | unwire
	Dir    string
}

func (e *EditedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: these files changed after metaclaw wired them (by you or by %s itself):\n", e.Client, e.Client)
	for _, f := range e.Files {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	if e.Verb == "unwire" {
		fmt.Fprintf(&b, "unwiring restores each file exactly as it was before wiring (kept in %s), which would drop those later changes.\n", e.Dir)
		fmt.Fprintf(&b, "Review them, then run `metaclaw unwire %s --force`: the current versions are saved under %s/replaced/ first.", e.Client, e.Dir)
	} else {
		fmt.Fprintf(&b, "re-wiring rebuilds each file from its version before wiring (kept in %s), which would drop those later changes.\n", e.Dir)
		fmt.Fprintf(&b, "Review them, then run `metaclaw wire %s --force` (the current versions are saved under %s/replaced/ first), or `metaclaw unwire %s --force` to undo the wiring.", e.Client, e.Dir, e.Client)
	}
	return b.String()
}

// edited lists manifest files whose content on disk is not what metaclaw wrote.
func edited(m *Manifest) ([]string, error) {
	var out []string
	for _, f := range m.Files {
		if f.Owned {
			continue
		}
		cur, err := current(f.Path)
		if err != nil {
			return nil, err
		}
		if sum(cur) != f.WrittenSHA256 {
			out = append(out, f.Path)
		}
	}
	return out, nil
}

// Plan detects the client and computes the plan against the pre-wiring view.
func (e *Engine) Plan(a Adapter, req *Request, configOverride string) (*Plan, *Manifest, error) {
	active, err := e.Active(a.Name())
	if err != nil {
		return nil, nil, err
	}
	env := *e.Env
	env.view = map[string][]byte{}
	if active != nil {
		for _, f := range active.Files {
			orig, err := active.original(f)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: the backup of %s is missing (%w); restore it by hand", a.Name(), f.Path, err)
			}
			env.view[filepath.Clean(f.Path)] = orig
		}
	}
	d, err := a.Detect(&env, configOverride)
	if err != nil {
		return nil, nil, err
	}
	if !d.Found {
		where := d.ConfigPath
		if where == "" {
			where = d.Home
		}
		return nil, nil, fmt.Errorf("%w: %s is not installed here (looked for %s)", ErrNotFound, a.Name(), where)
	}
	for _, ag := range req.Agents {
		if err := ValidAgent(ag); err != nil {
			return nil, nil, err
		}
	}
	p, err := a.Plan(&env, d, req)
	if err != nil {
		return nil, nil, err
	}
	p.Client, p.Detection = a.Name(), d
	if p.Via == "" {
		p.Via = req.Via
	}
	return p, active, nil
}

// Wire shows and applies the plan for one client.
func (e *Engine) Wire(ctx context.Context, a Adapter, req *Request, configOverride string, o WireOptions) error {
	p, active, err := e.Plan(a, req, configOverride)
	if err != nil {
		return err
	}
	w := e.out()
	if active != nil && !o.Force {
		if ed, err := edited(active); err != nil {
			return err
		} else if len(ed) > 0 {
			return &EditedError{Client: a.Name(), Files: ed, Verb: "wire", Dir: active.dir}
		}
	}
	changes, err := e.changes(p, active)
	if err != nil {
		return err
	}
	setupHash := hashCommands(p.Setup)
	if p.SetupKey != "" {
		setupHash = sum([]byte(p.SetupKey))
	}
	runSetup := len(p.Setup) > 0 && (active == nil || active.SetupHash != setupHash)

	d := p.Detection
	fmt.Fprintf(w, "%s %s (%s)", a.Name(), d.Version, d.ConfigPath)
	if len(p.Agents) > 0 {
		fmt.Fprintf(w, ", agent %s", strings.Join(p.Agents, ", "))
	}
	fmt.Fprintf(w, ", via %s\n", p.Via)
	if len(changes) == 0 && !runSetup {
		fmt.Fprintf(w, "already wired: nothing to change\n")
		for _, n := range p.Notes {
			fmt.Fprintf(w, "note: %s\n", n)
		}
		return nil
	}
	mask := masker(req.ProxyKey)
	for _, c := range changes {
		fmt.Fprint(w, mask(diffOf(c)))
	}
	if runSetup {
		for _, c := range p.Setup {
			fmt.Fprintf(w, "will run: %s\n", mask(c.String()))
		}
	}
	if !o.NoRestart {
		for _, c := range p.Restart {
			fmt.Fprintf(w, "will run: %s\n", c.String())
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if o.DryRun {
		fmt.Fprintf(w, "dry run: nothing was changed\n")
		return nil
	}
	if !o.Yes {
		if e.Confirm == nil || !e.Confirm(fmt.Sprintf("Apply these changes to %s?", a.Name())) {
			return errors.New("not applied (confirm, or pass --yes)")
		}
	}

	m := active
	now := e.Env.Now().UTC()
	if m == nil {
		dir, err := newBackupDir(e.backupRoot(a.Name()), now)
		if err != nil {
			return err
		}
		m = &Manifest{Format: 1, Client: a.Name(), State: "wired", CreatedAt: now, dir: dir}
	}
	if o.Force && active != nil {
		if ed, _ := edited(active); len(ed) > 0 {
			if err := saveReplaced(m, ed); err != nil {
				return err
			}
			fmt.Fprintf(w, "saved the edited versions under %s\n", filepath.Join(m.dir, "replaced"))
		}
	}
	// Back up originals of files touched for the first time.
	for _, c := range changes {
		if c.restore != nil || m.file(c.path) != nil {
			continue
		}
		mf, err := backupOriginal(m, c.path, c.before, c.fc)
		if err != nil {
			return err
		}
		m.Files = append(m.Files, mf)
	}
	m.UpdatedAt, m.Metaclaw, m.ClientVersion, m.ConfigPath = now, e.Version, d.Version, d.ConfigPath
	m.Agents, m.Via, m.URLs, m.Sandbox, m.Expect, m.Restart = p.Agents, p.Via, p.URLs, p.Sandbox, p.Expect, p.Restart
	if err := m.save(); err != nil { // the originals are safe before anything is written
		return err
	}
	fmt.Fprintf(w, "backup: %s\n", m.dir)

	done := []change{}
	rollback := func(cause error) error {
		for i := len(done) - 1; i >= 0; i-- {
			c := done[i]
			link := ""
			if l, ok := strings.CutPrefix(string(c.before), "link:"); ok && c.fc != nil && c.fc.Link != "" {
				link = l
			}
			_ = apply(c.path, c.before, c.mode, link)
		}
		return fmt.Errorf("%w (every file written in this run was put back)", cause)
	}
	for _, c := range changes {
		var err error
		switch {
		case c.restore != nil:
			err = m.restoreFile(c.restore)
		default:
			dirs, derr := mkdirs(filepath.Dir(c.path))
			if derr != nil {
				return rollback(derr)
			}
			m.Dirs = appendNew(m.Dirs, dirs...)
			mode := c.fc.Mode
			if c.before != nil {
				mode = FileMode(c.path, mode)
			}
			if mode == 0 {
				mode = 0o644
			}
			err = apply(c.path, c.fc.After, mode, c.fc.Link)
			if err == nil {
				err = verifyWritten(c.path, c.fc)
			}
		}
		if err != nil {
			return rollback(err)
		}
		done = append(done, c)
		if c.after == nil && c.restore != nil {
			fmt.Fprintf(w, "removed %s\n", c.path)
		} else {
			fmt.Fprintf(w, "wrote %s\n", c.path)
		}
	}
	// Record what was written; drop files that are back to their originals.
	planned := map[string]*FileChange{}
	for _, fc := range p.Files {
		path := filepath.Clean(fc.Path)
		if fc.Link == "" {
			path = realPath(path)
		}
		planned[path] = fc
	}
	var keep []*ManifestFile
	for _, f := range m.Files {
		fc, ok := planned[f.Path]
		if !ok {
			continue
		}
		cur, err := current(f.Path)
		if err != nil {
			return err
		}
		f.WrittenSHA256, f.Owned, f.Link, f.Format = sum(cur), fc.Owned, fc.Link, fc.Format
		keep = append(keep, f)
	}
	m.Files = keep
	// Directories metaclaw created that no longer hold a planned file go too.
	var dirs []string
	for i := len(m.Dirs) - 1; i >= 0; i-- {
		d := m.Dirs[i]
		used := false
		for path := range planned {
			if strings.HasPrefix(path, d+string(filepath.Separator)) {
				used = true
			}
		}
		if !used && os.Remove(d) == nil {
			continue
		}
		dirs = append([]string{d}, dirs...)
	}
	m.Dirs = dirs
	if runSetup {
		if active == nil || len(m.Undo) == 0 {
			for _, c := range p.Setup {
				if c.Undo != nil {
					m.Undo = append(m.Undo, *c.Undo)
				}
			}
		}
		for _, c := range p.Setup {
			fmt.Fprintf(w, "running: %s\n", mask(c.String()))
			if _, stderr, err := e.Env.Runner.Run(ctx, c.Name, c.Args...); err != nil {
				if c.Optional {
					fmt.Fprintf(w, "warning: %s failed: %v %s\n", c.Name, err, strings.TrimSpace(stderr))
					continue
				}
				m.SetupHash = ""
				_ = m.save()
				return fmt.Errorf("%s failed: %w: %s\nthe files are wired and backed up; fix the problem and run `metaclaw wire %s` again, or `metaclaw unwire %s`",
					mask(c.String()), err, strings.TrimSpace(stderr), a.Name(), a.Name())
			}
		}
		m.SetupHash = setupHash
	}
	if err := m.save(); err != nil {
		return err
	}
	if !o.NoRestart {
		e.restart(ctx, p.Restart)
		e.reload(ctx, a)
	}
	fmt.Fprintf(w, "%s wired; undo with `metaclaw unwire %s`\n", a.Name(), a.Name())
	return nil
}

func (e *Engine) reload(ctx context.Context, a Adapter) {
	r, ok := a.(Reloader)
	if !ok {
		return
	}
	msg, err := r.Reload(ctx, e.Env)
	if err != nil {
		fmt.Fprintf(e.out(), "warning: %v\n", err)
	} else if msg != "" {
		fmt.Fprintf(e.out(), "%s\n", msg)
	}
}

func (e *Engine) restart(ctx context.Context, cmds []Command) {
	w := e.out()
	for _, c := range cmds {
		if c.Name == "" {
			continue
		}
		if e.Env.LookPath != nil {
			if _, err := e.Env.LookPath(c.Name); err != nil {
				fmt.Fprintf(w, "note: %s is not on PATH; run `%s` yourself so the change takes effect\n", c.Name, c.String())
				continue
			}
		}
		fmt.Fprintf(w, "running: %s\n", c.String())
		if _, stderr, err := e.Env.Runner.Run(ctx, c.Name, c.Args...); err != nil {
			fmt.Fprintf(w, "warning: `%s` failed (%v) %s; run it yourself so the change takes effect\n", c.String(), err, strings.TrimSpace(firstLine(stderr)))
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// changes lists the transitions from disk to the plan, plus the restore of
// files a previous wiring touched that this plan no longer does.
func (e *Engine) changes(p *Plan, active *Manifest) ([]change, error) {
	var out []change
	seen := map[string]bool{}
	for _, fc := range p.Files {
		path := filepath.Clean(fc.Path)
		if fc.Link == "" {
			path = realPath(path)
		}
		if seen[path] {
			return nil, fmt.Errorf("internal error: %s planned twice", path)
		}
		seen[path] = true
		cur, err := current(path)
		if err != nil {
			return nil, err
		}
		after := fc.After
		if fc.Link != "" {
			after = []byte("link:" + fc.Link)
		}
		if string(cur) == string(after) && cur != nil {
			continue
		}
		out = append(out, change{path: path, mode: FileMode(path, 0o644), before: cur, after: after, fc: fc})
	}
	if active != nil {
		for _, f := range active.Files {
			path := filepath.Clean(f.Path)
			if seen[path] {
				continue
			}
			orig, err := active.original(f)
			if err != nil {
				return nil, err
			}
			cur, err := current(path)
			if err != nil {
				return nil, err
			}
			if string(cur) == string(orig) && (cur == nil) == (orig == nil) {
				continue
			}
			out = append(out, change{path: path, mode: FileMode(path, 0o644), before: cur, after: orig, restore: f})
		}
	}
	return out, nil
}

func diffOf(c change) string {
	if c.fc != nil && c.fc.Link != "" {
		return fmt.Sprintf("symlink %s -> %s\n", c.path, c.fc.Link)
	}
	if c.restore != nil && c.restore.Link != "" {
		return fmt.Sprintf("remove symlink %s\n", c.path)
	}
	label := c.path + " (wired)"
	if c.restore != nil {
		label = c.path + " (restored)"
	}
	return edit.Diff(c.path, label, c.before, c.after)
}

func masker(key string) func(string) string {
	if len(key) < 6 {
		return func(s string) string { return s }
	}
	return func(s string) string { return strings.ReplaceAll(s, key, "<proxy.api_key>") }
}

func hashCommands(cmds []Command) string {
	if len(cmds) == 0 {
		return ""
	}
	b, _ := json.Marshal(cmds)
	return sum(b)
}

func newBackupDir(root string, now time.Time) (string, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", err
	}
	base := now.Format("20060102T150405Z")
	for i := 0; ; i++ {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s-%d", base, i+1)
		}
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o700); err == nil {
			return dir, nil
		} else if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
}

func backupOriginal(m *Manifest, path string, before []byte, fc *FileChange) (*ManifestFile, error) {
	mf := &ManifestFile{Path: path, Existed: before != nil}
	if fc != nil {
		mf.Owned, mf.Link, mf.Format = fc.Owned, fc.Link, fc.Format
	}
	if before == nil {
		return mf, nil
	}
	if st, err := os.Lstat(path); err == nil {
		mf.Mode = uint32(st.Mode().Perm())
		if st.Mode()&fs.ModeSymlink != 0 {
			// a symlink we replace with ours: keep its target
			mf.OriginalLink = strings.TrimPrefix(string(before), "link:")
			mf.OriginalSHA256 = sum(before)
			return mf, nil
		}
	}
	if err := os.MkdirAll(filepath.Join(m.dir, "files"), 0o700); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("files/%03d-%s", len(m.Files)+1, filepath.Base(path))
	if err := WriteAtomic(filepath.Join(m.dir, name), before, 0o600); err != nil {
		return nil, err
	}
	mf.Original, mf.OriginalSHA256 = name, sum(before)
	return mf, nil
}

func saveReplaced(m *Manifest, paths []string) error {
	dir := filepath.Join(m.dir, "replaced", time.Now().UTC().Format("20060102T150405Z"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for i, p := range paths {
		b, err := current(p)
		if err != nil || b == nil {
			continue
		}
		if err := WriteAtomic(filepath.Join(dir, fmt.Sprintf("%03d-%s", i+1, filepath.Base(p))), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// mkdirs creates dir and returns the directories it created, outermost first.
func mkdirs(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	slices.Reverse(missing)
	return missing, nil
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}

// apply puts content (nil: remove) at path.
func apply(path string, content []byte, mode fs.FileMode, link string) error {
	if link != "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return os.Symlink(link, path)
	}
	if content == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if mode == 0 {
		mode = 0o644
	}
	if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		// do not write through a symlink we are restoring from a plain file
		if t, err := filepath.EvalSymlinks(path); err == nil {
			return WriteAtomic(t, content, mode)
		}
	}
	return WriteAtomic(path, content, mode)
}

// WriteAtomic replaces path with data: a temp file in the same directory,
// fsync, chmod, rename, fsync of the directory.
func WriteAtomic(path string, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".metaclaw-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err = tmp.Chmod(mode); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	if d, e := os.Open(dir); e == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// verifyWritten re-reads a written file and parses it in its format.
func verifyWritten(path string, fc *FileChange) error {
	if fc.Link != "" {
		t, err := os.Readlink(path)
		if err != nil || t != fc.Link {
			return fmt.Errorf("verify %s: the symlink does not point at %s", path, fc.Link)
		}
		return nil
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("verify %s: %w", path, err)
	}
	if string(got) != string(fc.After) {
		return fmt.Errorf("verify %s: the file does not hold what was written", path)
	}
	if err := ParseFormat(fc.Format, got); err != nil {
		return fmt.Errorf("verify %s: %w", path, err)
	}
	return nil
}

// ParseFormat checks that b parses as format.
func ParseFormat(format string, b []byte) error {
	var v any
	switch format {
	case "json":
		if !json.Valid(b) {
			return errors.New("not valid JSON")
		}
	case "json5":
		return json5.Unmarshal(b, &v)
	case "toml":
		return toml.Unmarshal(b, &v)
	case "yaml":
		return yaml.Unmarshal(b, &v)
	case "env":
		_, err := edit.ParseEnv(b)
		return err
	}
	return nil
}

// Decode parses b in format into a generic tree.
func Decode(format string, b []byte) (any, error) {
	var v any
	var err error
	switch format {
	case "json", "json5":
		err = json5.Unmarshal(b, &v)
	case "toml":
		var m map[string]any
		err = toml.Unmarshal(b, &m)
		v = m
	case "yaml":
		err = yaml.Unmarshal(b, &v)
	case "env":
		var e *edit.Env
		e, err = edit.ParseEnv(b)
		if err == nil {
			v = e
		}
	default:
		return nil, fmt.Errorf("unknown format %q", format)
	}
	return v, err
}

// UnwireOptions are the flags of `metaclaw unwire`.
type UnwireOptions struct {
	DryRun    bool
	Force     bool
	NoRestart bool
}

// ErrNotWired is returned when a client has no active wiring.
var ErrNotWired = errors.New("not wired")

// Unwire restores every file of the active wiring byte for byte and runs
// the undo commands.
func (e *Engine) Unwire(ctx context.Context, a Adapter, o UnwireOptions) error {
	client := a.Name()
	m, err := e.Active(client)
	if err != nil {
		return err
	}
	w := e.out()
	if m == nil {
		return fmt.Errorf("%w: %s has no wiring recorded under %s", ErrNotWired, client, e.backupRoot(client))
	}
	ed, err := edited(m)
	if err != nil {
		return err
	}
	if len(ed) > 0 && !o.Force {
		return &EditedError{Client: client, Files: ed, Verb: "unwire", Dir: m.dir}
	}
	type step struct {
		f      *ManifestFile
		cur    []byte
		orig   []byte
		change bool
	}
	var steps []step
	for _, f := range m.Files {
		orig, err := m.original(f)
		if err != nil {
			return fmt.Errorf("%s: the backup of %s is missing: %w", client, f.Path, err)
		}
		cur, err := current(f.Path)
		if err != nil {
			return err
		}
		ch := !(string(cur) == string(orig) && (cur == nil) == (orig == nil))
		steps = append(steps, step{f, cur, orig, ch})
		if ch {
			fmt.Fprint(w, edit.Diff(f.Path+" (wired)", f.Path, cur, orig))
		}
	}
	for i := len(m.Undo) - 1; i >= 0; i-- {
		fmt.Fprintf(w, "will run: %s\n", m.Undo[i].String())
	}
	if o.DryRun {
		fmt.Fprintf(w, "dry run: nothing was changed\n")
		return nil
	}
	if len(ed) > 0 {
		if err := saveReplaced(m, ed); err != nil {
			return err
		}
		fmt.Fprintf(w, "saved the edited versions under %s\n", filepath.Join(m.dir, "replaced"))
	}
	for _, s := range steps {
		if !s.change {
			continue
		}
		if err := m.restoreFile(s.f); err != nil {
			return fmt.Errorf("restore %s: %w (the original is in %s)", s.f.Path, err, m.dir)
		}
		got, err := current(s.f.Path)
		if err != nil || sum(got) != sum(s.orig) {
			return fmt.Errorf("restore %s: the file does not match the backup after writing (the original is in %s)", s.f.Path, m.dir)
		}
		if s.orig == nil {
			fmt.Fprintf(w, "removed %s\n", s.f.Path)
		} else {
			fmt.Fprintf(w, "restored %s\n", s.f.Path)
		}
	}
	for i := len(m.Dirs) - 1; i >= 0; i-- {
		_ = os.Remove(m.Dirs[i]) // only when empty
	}
	var failed []string
	for i := len(m.Undo) - 1; i >= 0; i-- {
		c := m.Undo[i]
		fmt.Fprintf(w, "running: %s\n", c.String())
		if _, stderr, err := e.Env.Runner.Run(ctx, c.Name, c.Args...); err != nil {
			failed = append(failed, fmt.Sprintf("`%s`: %v %s", c.String(), err, strings.TrimSpace(firstLine(stderr))))
		}
	}
	now := e.Env.Now().UTC()
	m.State, m.UnwiredAt, m.UpdatedAt = "unwired", &now, now
	if err := m.save(); err != nil {
		return err
	}
	if !o.NoRestart {
		e.restart(ctx, m.Restart)
		e.reload(ctx, a)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s: files restored, but these commands failed; run them yourself:\n  %s", client, strings.Join(failed, "\n  "))
	}
	fmt.Fprintf(w, "%s unwired: every file is back to its version before wiring\n", client)
	return nil
}

// PromptConfirm asks on r/w and reads y/yes.
func PromptConfirm(r io.Reader, w io.Writer) func(string) bool {
	br := bufio.NewReader(r)
	return func(q string) bool {
		fmt.Fprintf(w, "%s [y/N] ", q)
		line, _ := br.ReadString('\n')
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return true
		}
		return false
	}
}
