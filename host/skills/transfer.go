package skills

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Lint reads a skill folder without touching the store: every skill that
// loads (with its warnings) and every problem, fatal or not. With check,
// each skill is also run through the evolver's safety checks (CheckText),
// whose findings are reported as warnings.
func Lint(dir string, check bool) ([]*Skill, []Problem, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	l := &Library{dir: abs}
	found, problems, err := l.scan()
	if err != nil {
		return nil, nil, err
	}
	out := make([]*Skill, 0, len(found))
	for _, f := range found {
		if check {
			for _, fd := range CheckText(skillText(f.skill.Name, f.skill.Description, f.skill.Tags, f.skill.Body)) {
				problems = append(problems, Problem{Path: f.skill.Path, Reason: "safety check: " + fd.String()})
			}
		}
		out = append(out, f.skill)
	}
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Path < problems[j].Path })
	return out, problems, nil
}

// Export writes the selected skills as a .tar.gz of <name>/SKILL.md.
func Export(w io.Writer, list []*Skill) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, s := range list {
		data, err := os.ReadFile(s.Path)
		if err != nil {
			return fmt.Errorf("export %s: %w", s.Name, err)
		}
		hdr := &tar.Header{Name: s.Name + "/" + FileName, Mode: 0o600, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// maxImportFiles and maxImportBytes bound what an import reads.
const (
	maxImportFiles = MaxSkills
	maxImportBytes = 256 << 20
)

// ReadSkills reads skills to import from a SKILL.md file, a folder of
// <name>/SKILL.md folders (or one skill folder), or a .tar.gz made by Export.
// Files that do not parse are returned as problems.
func ReadSkills(src string) ([]*Skill, []Problem, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return nil, nil, err
	}
	var skills []*Skill
	var problems []Problem
	add := func(where string, data []byte) {
		s, err := Parse(data)
		if err != nil {
			problems = append(problems, Problem{Path: where, Reason: err.Error(), Fatal: true})
			return
		}
		s.Warnings = nil
		skills = append(skills, s)
	}
	switch {
	case fi.IsDir():
		if data, err := os.ReadFile(filepath.Join(src, FileName)); err == nil {
			add(filepath.Join(src, FileName), data)
			break
		}
		matches, _ := filepath.Glob(filepath.Join(src, "*", FileName))
		sort.Strings(matches)
		for i, m := range matches {
			if i >= maxImportFiles {
				break
			}
			data, err := os.ReadFile(m)
			if err != nil {
				problems = append(problems, Problem{Path: m, Reason: err.Error(), Fatal: true})
				continue
			}
			add(m, data)
		}
	case strings.HasSuffix(src, ".tar.gz") || strings.HasSuffix(src, ".tgz"):
		f, err := os.Open(src)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", src, err)
		}
		tr := tar.NewReader(io.LimitReader(gz, maxImportBytes))
		for n := 0; n < maxImportFiles; n++ {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", src, err)
			}
			if hdr.Typeflag != tar.TypeReg || path.Base(hdr.Name) != FileName {
				continue
			}
			var buf bytes.Buffer
			if _, err := io.Copy(&buf, io.LimitReader(tr, MaxFileBytes+1)); err != nil {
				return nil, nil, err
			}
			add(src+":"+hdr.Name, buf.Bytes())
		}
	default:
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, nil, err
		}
		add(src, data)
	}
	return skills, problems, nil
}

// ImportOptions decide what Import does with conflicts and unsafe content.
type ImportOptions struct {
	Overwrite bool // replace skills of the same name (generation bumped)
	Pending   bool // import as pending (review with approve/reject)
	Force     bool // import even what fails the safety checks
}

// ImportResult says what happened to each skill.
type ImportResult struct {
	Imported []string          `json:"imported"`
	Replaced []string          `json:"replaced"`
	Skipped  map[string]string `json:"skipped"`
}

// Import adds skills to the library. Skills from elsewhere are checked like
// evolver proposals (secrets, instruction overrides, unknown hosts …) and
// skipped when they fail, unless Force.
func Import(ctx context.Context, lib *Library, list []*Skill, o ImportOptions) (ImportResult, error) {
	res := ImportResult{Skipped: map[string]string{}}
	now := lib.now().UTC().Truncate(time.Second)
	for _, s := range list {
		if f := CheckText(skillText(s.Name, s.Description, s.Tags, s.Body)); len(f) > 0 && !o.Force {
			var r []string
			for _, x := range f {
				r = append(r, x.String())
			}
			res.Skipped[s.Name] = "failed safety checks (--force to import anyway): " + strings.Join(r, "; ")
			continue
		}
		if o.Pending {
			s.Status = StatusPending
		}
		if s.Source == "" {
			s.Source = "import"
		}
		if s.Created.IsZero() {
			s.Created = now
		}
		s.Updated = now
		if _, exists := lib.Get(s.Name); exists {
			if !o.Overwrite {
				res.Skipped[s.Name] = "a skill with this name exists (--overwrite to replace it)"
				continue
			}
			in := s
			if _, err := lib.Update(ctx, s.Name, true, Event{Action: "imported", Source: "import", Reason: "replaced by import"}, func(cur *Skill) error {
				gen := cur.Generation
				*cur = *in.Clone()
				cur.Generation = max(gen, in.Generation)
				return nil
			}); err != nil {
				return res, err
			}
			res.Replaced = append(res.Replaced, s.Name)
			continue
		}
		if _, err := lib.Save(ctx, s, Event{Action: "imported", Source: "import"}); err != nil {
			return res, err
		}
		res.Imported = append(res.Imported, s.Name)
	}
	return res, nil
}
