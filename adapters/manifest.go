package adapters

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The manifest of a wiring and its backups: which files metaclaw changed, their
// original bytes, and whether they were edited since.

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
