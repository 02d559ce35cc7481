package adapters

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

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
