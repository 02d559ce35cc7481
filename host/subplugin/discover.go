package subplugin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// ExecPrefix starts the file name of every discovered plugin executable:
// metaclaw-<kind>-<name>, e.g. metaclaw-embedder-ref.
const ExecPrefix = "metaclaw-"

// DirName is the plugins directory under $METACLAW_HOME.
const DirName = "plugins"

// Spec says how to launch one plugin.
type Spec struct {
	Kind string   // registered kind, e.g. "embedder"
	Name string   // short name, e.g. "ref"
	Path string   // executable
	Args []string // arguments after the executable
	Env  []string // extra KEY=VALUE pairs on top of the host's environment
}

// Skipped is a file in the plugins directory that is named like a plugin but
// cannot be used, with the reason.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Errors of discovery and resolution.
var (
	ErrNotFound      = errors.New("plugin not found")
	ErrNotExecutable = errors.New("plugin file is not executable")
	ErrUnknownKind   = errors.New("unknown plugin kind")
)

var pluginName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// Discover lists the plugins in dir: regular, executable files named
// metaclaw-<kind>-<name> for a registered kind, where <name> is made of a-z,
// 0-9, '_' and '-'. Symbolic links are followed. Other files are ignored,
// except files named like a plugin that cannot be used, which are returned as
// skipped with the reason (unknown kind, bad name, not executable,
// world-writable). A missing directory is empty, not an error.
func Discover(dir string) ([]Spec, []Skipped, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("plugins dir %s: %w", dir, err)
	}
	var specs []Spec
	var skipped []Skipped
	for _, e := range entries {
		file := e.Name()
		if !strings.HasPrefix(file, ExecPrefix) {
			continue
		}
		path := filepath.Join(dir, file)
		kind, name, err := parseExecName(file)
		if err == nil {
			err = checkExecutable(path)
		}
		if err != nil {
			skipped = append(skipped, Skipped{Path: path, Reason: err.Error()})
			continue
		}
		specs = append(specs, Spec{Kind: kind, Name: name, Path: path})
	}
	return specs, skipped, nil
}

// ExecName is the file name a plugin of kind and name is discovered under.
func ExecName(kind, name string) string {
	n := ExecPrefix + kind + "-" + name
	if runtime.GOOS == "windows" {
		n += ".exe"
	}
	return n
}

func parseExecName(file string) (kind, name string, err error) {
	rest := strings.TrimPrefix(file, ExecPrefix)
	if runtime.GOOS == "windows" {
		rest = strings.TrimSuffix(rest, ".exe")
	}
	kind, name, ok := strings.Cut(rest, "-")
	if !ok {
		return "", "", fmt.Errorf("name is not %s<kind>-<name>", ExecPrefix)
	}
	if _, known := LookupKind(kind); !known {
		return "", "", fmt.Errorf("%w %q (known: %s)", ErrUnknownKind, kind, strings.Join(Kinds(), ", "))
	}
	if !pluginName.MatchString(name) {
		return "", "", fmt.Errorf("plugin name %q: use only a-z, 0-9, '_' and '-'", name)
	}
	return kind, name, nil
}

// checkExecutable verifies path is a regular executable file that not
// everyone may rewrite.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s does not exist", ErrNotFound, path)
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if runtime.GOOS != "windows" {
		if fi.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("%w: %s (chmod +x it)", ErrNotExecutable, path)
		}
		if fi.Mode().Perm()&0o002 != 0 {
			return fmt.Errorf("%s is writable by every user; refusing to run it (chmod o-w it)", path)
		}
	}
	return nil
}

// Resolve turns a reference from config into a Spec. ref is either a path
// to an executable (it contains a path separator; relative paths are taken
// from the working directory) or a plugin name, looked up in dir as
// metaclaw-<kind>-<ref>.
func Resolve(kind, ref, dir string) (Spec, error) {
	if _, ok := LookupKind(kind); !ok {
		return Spec{}, fmt.Errorf("%w %q", ErrUnknownKind, kind)
	}
	if ref == "" {
		return Spec{}, fmt.Errorf("%w: no %s plugin named", ErrNotFound, kind)
	}
	if strings.ContainsRune(ref, '/') || strings.ContainsRune(ref, filepath.Separator) {
		path, err := filepath.Abs(ref)
		if err != nil {
			return Spec{}, err
		}
		if err := checkExecutable(path); err != nil {
			return Spec{}, fmt.Errorf("%s plugin: %w", kind, err)
		}
		name := filepath.Base(path)
		if k, n, err := parseExecName(name); err == nil && k == kind {
			name = n
		}
		return Spec{Kind: kind, Name: name, Path: path}, nil
	}
	if !pluginName.MatchString(ref) {
		return Spec{}, fmt.Errorf("%s plugin name %q: use only a-z, 0-9, '_' and '-', or give a path", kind, ref)
	}
	path := filepath.Join(dir, ExecName(kind, ref))
	if err := checkExecutable(path); err != nil {
		if errors.Is(err, ErrNotFound) {
			var avail []string
			specs, _, _ := Discover(dir)
			for _, s := range specs {
				if s.Kind == kind {
					avail = append(avail, s.Name)
				}
			}
			list := "none"
			if len(avail) > 0 {
				list = strings.Join(avail, ", ")
			}
			return Spec{}, fmt.Errorf("%w: no %s plugin %q in %s (expected the executable %s; %s plugins found there: %s)",
				ErrNotFound, kind, ref, dir, path, kind, list)
		}
		return Spec{}, fmt.Errorf("%s plugin %q: %w", kind, ref, err)
	}
	return Spec{Kind: kind, Name: ref, Path: path}, nil
}
