package adapters

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
	"github.com/metaclaw-go/metaclaw/internal/atomicfile"
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

func (e *Engine) out() io.Writer {
	if e.Out == nil {
		return io.Discard
	}
	return e.Out
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

// Wire shows and applies the plan for one client: it shows the changes,
// asks, backs up the originals, writes and verifies every file (putting all
// back on a failure), records the manifest, runs the setup commands and
// restarts the client.
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
	setupHash, runSetup := setupToRun(p, active)

	e.showTarget(a.Name(), p)
	if len(changes) == 0 && !runSetup {
		fmt.Fprintf(w, "already wired: nothing to change\n")
		for _, n := range p.Notes {
			fmt.Fprintf(w, "note: %s\n", n)
		}
		return nil
	}
	mask := masker(req.ProxyKey)
	e.showChanges(p, changes, runSetup, mask, o.NoRestart)
	if o.DryRun {
		fmt.Fprintf(w, "dry run: nothing was changed\n")
		return nil
	}
	if !o.Yes {
		if e.Confirm == nil || !e.Confirm(fmt.Sprintf("Apply these changes to %s?", a.Name())) {
			return errors.New("not applied (confirm, or pass --yes)")
		}
	}

	m, err := e.backUp(a.Name(), p, active, changes, o.Force)
	if err != nil {
		return err
	}
	if err := e.writeChanges(m, changes); err != nil {
		return err
	}
	if err := m.recordWritten(p); err != nil {
		return err
	}
	if runSetup {
		if err := e.runSetup(ctx, a.Name(), m, p, active, setupHash, mask); err != nil {
			return err
		}
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

// setupToRun is the hash of the plan's setup commands (or of its SetupKey)
// and whether they must run: this wiring has not run them yet, or they
// changed since.
func setupToRun(p *Plan, active *Manifest) (hash string, run bool) {
	hash = hashCommands(p.Setup)
	if p.SetupKey != "" {
		hash = sum([]byte(p.SetupKey))
	}
	return hash, len(p.Setup) > 0 && (active == nil || active.SetupHash != hash)
}

// showTarget prints which client, config file, agents and route the plan is for.
func (e *Engine) showTarget(client string, p *Plan) {
	w := e.out()
	d := p.Detection
	fmt.Fprintf(w, "%s %s (%s)", client, d.Version, d.ConfigPath)
	if len(p.Agents) > 0 {
		fmt.Fprintf(w, ", agent %s", strings.Join(p.Agents, ", "))
	}
	fmt.Fprintf(w, ", via %s\n", p.Via)
}

// showChanges prints the diff of every change, the commands that will run
// and the plan's notes, with the proxy key masked.
func (e *Engine) showChanges(p *Plan, changes []change, runSetup bool, mask func(string) string, noRestart bool) {
	w := e.out()
	for _, c := range changes {
		fmt.Fprint(w, mask(diffOf(c)))
	}
	if runSetup {
		for _, c := range p.Setup {
			fmt.Fprintf(w, "will run: %s\n", mask(c.String()))
		}
	}
	if !noRestart {
		for _, c := range p.Restart {
			fmt.Fprintf(w, "will run: %s\n", c.String())
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// backUp readies the manifest before anything is written: the active one or
// a new backup folder; with force, the edited versions of wired files saved
// aside; the originals of files touched for the first time copied; the
// manifest saved with the plan's details.
func (e *Engine) backUp(client string, p *Plan, active *Manifest, changes []change, force bool) (*Manifest, error) {
	w := e.out()
	m := active
	now := e.Env.Now().UTC()
	if m == nil {
		dir, err := newBackupDir(e.backupRoot(client), now)
		if err != nil {
			return nil, err
		}
		m = &Manifest{Format: 1, Client: client, State: "wired", CreatedAt: now, dir: dir}
	}
	if force && active != nil {
		if ed, _ := edited(active); len(ed) > 0 {
			if err := saveReplaced(m, ed); err != nil {
				return nil, err
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
			return nil, err
		}
		m.Files = append(m.Files, mf)
	}
	d := p.Detection
	m.UpdatedAt, m.Metaclaw, m.ClientVersion, m.ConfigPath = now, e.Version, d.Version, d.ConfigPath
	m.Agents, m.Via, m.URLs, m.Sandbox, m.Expect, m.Restart = p.Agents, p.Via, p.URLs, p.Sandbox, p.Expect, p.Restart
	if err := m.save(); err != nil { // the originals are safe before anything is written
		return nil, err
	}
	fmt.Fprintf(w, "backup: %s\n", m.dir)
	return m, nil
}

// writeChanges writes (or restores, or removes) every changed file and
// verifies it; on the first failure every file written in this run is put
// back. Directories it creates are recorded in m.
func (e *Engine) writeChanges(m *Manifest, changes []change) error {
	w := e.out()
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
	return nil
}

// recordWritten records what was written (the hash of each planned file as
// it is now) and drops files that are back to their originals, and the
// directories metaclaw created that no longer hold a planned file.
func (m *Manifest) recordWritten(p *Plan) error {
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
	return nil
}

// runSetup runs the plan's setup commands (recording their undo commands
// on the first wiring) and records setupHash once they succeeded. An
// optional command that fails is a warning; any other failure is an error
// that says how to retry or undo.
func (e *Engine) runSetup(ctx context.Context, client string, m *Manifest, p *Plan, active *Manifest, setupHash string, mask func(string) string) error {
	w := e.out()
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
				mask(c.String()), err, strings.TrimSpace(stderr), client, client)
		}
	}
	m.SetupHash = setupHash
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

// WriteAtomic replaces path with data: a temp file in the same directory,
// fsync, chmod, rename, fsync of the directory (internal/atomicfile).
func WriteAtomic(path string, data []byte, mode fs.FileMode) error {
	return atomicfile.Write(path, data, mode)
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
