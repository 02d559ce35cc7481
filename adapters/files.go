package adapters

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/pelletier/go-toml/v2"
	"github.com/titanous/json5"
	"go.yaml.in/yaml/v3"

	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// Files on disk as the engine sees them: symlinks, reads, writes, created
// directories and the check that a written file parses.

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
