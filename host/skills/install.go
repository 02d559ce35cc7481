package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
)

// bankManifest records the hash of every bank skill as installed, so a later
// install can tell an untouched bank skill (safe to upgrade) from one the
// user edited (never overwritten).
const bankManifest = ".bank.json"

// InstallResult says what InstallBank did with each bank skill.
type InstallResult struct {
	Installed []string          `json:"installed"`
	Upgraded  []string          `json:"upgraded"`
	Unchanged []string          `json:"unchanged"`
	Skipped   map[string]string `json:"skipped"` // name → why it was left alone
}

// InstallBank copies the skills of fsys (<name>/SKILL.md) into the library.
// A skill that already exists is upgraded only when it is the untouched copy
// of an earlier install; a skill the user wrote or edited is never overwritten.
func InstallBank(ctx context.Context, lib *Library, fsys fs.FS) (InstallResult, error) {
	res := InstallResult{Skipped: map[string]string{}}
	manifestPath := filepath.Join(lib.Dir(), bankManifest)
	manifest := map[string]string{}
	if raw, err := os.ReadFile(manifestPath); err == nil {
		if err := json.Unmarshal(raw, &manifest); err != nil {
			return res, fmt.Errorf("%s: %w", manifestPath, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return res, err
	}
	matches, err := fs.Glob(fsys, "*/"+FileName)
	if err != nil {
		return res, err
	}
	slices.Sort(matches)
	if _, err := lib.Sync(ctx); err != nil {
		return res, err
	}
	now := lib.now().UTC().Truncate(1e9)
	for _, m := range matches {
		raw, err := fs.ReadFile(fsys, m)
		if err != nil {
			return res, err
		}
		s, err := Parse(raw)
		if err != nil {
			return res, fmt.Errorf("bank skill %s: %w", m, err)
		}
		if s.Source == "" {
			s.Source = "bank"
		}
		cur, exists := lib.Get(s.Name)
		if !exists {
			if _, err := os.Stat(filepath.Join(lib.Dir(), path.Dir(m))); err == nil {
				res.Skipped[s.Name] = "a folder with this name exists but holds no valid skill (see metaclaw skills lint); left alone"
				continue
			}
			s.Created, s.Updated = now, now
			saved, err := lib.Save(ctx, s, Event{Action: "installed", Source: "bank"})
			if err != nil {
				return res, err
			}
			manifest[s.Name] = saved.Hash
			res.Installed = append(res.Installed, s.Name)
			continue
		}
		if sameContent(cur, s) {
			res.Unchanged = append(res.Unchanged, s.Name)
			if manifest[s.Name] == "" && cur.Source == "bank" {
				manifest[s.Name] = cur.Hash
			}
			continue
		}
		if manifest[s.Name] == "" || manifest[s.Name] != cur.Hash {
			if cur.Source == "bank" {
				res.Skipped[s.Name] = "you edited your copy; kept it (remove it first to get the new bank version)"
			} else {
				res.Skipped[s.Name] = "a skill with this name already exists and is not from the bank; kept it"
			}
			continue
		}
		s.Generation = cur.Generation + 1
		s.Created, s.Updated = cur.Created, now
		s.Status = cur.Status
		saved, err := lib.Save(ctx, s, Event{Action: "updated", Source: "bank", Reason: "new bank version"})
		if err != nil {
			return res, err
		}
		manifest[s.Name] = saved.Hash
		res.Upgraded = append(res.Upgraded, s.Name)
	}
	out, _ := json.MarshalIndent(manifest, "", "  ")
	if err := writeFileAtomic(manifestPath, append(out, '\n')); err != nil {
		return res, err
	}
	return res, nil
}

// sameContent compares what a skill says (not its bookkeeping).
func sameContent(a, b *Skill) bool {
	return a.Name == b.Name && a.Description == b.Description && a.Category == b.Category &&
		a.Body == b.Body && slices.Equal(a.Tags, b.Tags) && slices.Equal(a.Agents, b.Agents)
}

// BankNeverSetUp reports whether dir has never been given a skill bank
// decision: no bank manifest and no skill folder in it (a missing dir
// counts). Once the bank was installed (or declined, see DeclineBank) the
// manifest stays, so skills the user deleted are never brought back.
func BankNeverSetUp(dir string) (bool, error) {
	if _, err := os.Stat(filepath.Join(dir, bankManifest)); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	for _, e := range ents {
		if e.Name()[0] != '.' {
			return false, nil
		}
	}
	return true, nil
}

// DeclineBank records that the user chose not to install the bank (setup
// --install-bank=false): an empty manifest, so starting the host does not
// install it anyway, while `skills install-bank` still can.
func DeclineBank(dir string) error {
	if ok, err := BankNeverSetUp(dir); err != nil || !ok {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create skills dir: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, bankManifest), []byte("{}\n"))
}
