package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/metaclaw-go/metaclaw/internal/atomicfile"
)

// editMu serialises Set/Unset inside one process. Across processes each
// write is atomic (last writer wins).
var editMu sync.Mutex

// Set stores one key in $home/config.yaml, or in $home/secrets.yaml (mode
// 0600) for secret keys, after converting value to the key's type (bool:
// true/false/yes/no/1/0; lists: "a,b" or "[a, b]") and validating the whole
// resulting configuration. The file is edited in place: comments, key order
// and other keys are kept. Nothing is written if a file is broken (except
// for the very key being set) or the result would be invalid.
//
// The key's other names (e.g. Python's memory.max_injected_units for
// memory.top_k) and a copy of it in the other file are removed, so one
// setting lives in one place. An empty home means Home().
func Set(home, key, value string) error {
	f := schema().lookup(key)
	if f == nil {
		return unknownKeyError(key)
	}
	if f.kind == kSection {
		return &Error{Key: key, Msg: fmt.Sprintf("is a section; set one of its keys, e.g. `%s`", firstLeaf(f).path)}
	}
	val, err := parseValue(f, value)
	if err != nil {
		return &Error{Key: key, Msg: fmt.Sprintf("%v; for example `metaclaw config set %s %s`", err, key, strings.TrimPrefix(f.example(), f.name+": "))}
	}
	node := valueNode(f, val)
	return edit(home, key, isStrictHostKey(key), func(cfg, sec *editFile) error {
		target, other := cfg, sec
		if f.secret {
			target, other = sec, cfg
		}
		if err := target.set(key, node); err != nil {
			return err
		}
		if err := removeFrom([]*editFile{other}, key); err != nil {
			return err
		}
		return removeFrom([]*editFile{cfg, sec}, otherNames(f)...)
	})
}

// Unset removes a key (or a whole section, or an unknown key left in the
// file) from config.yaml and secrets.yaml, so its default applies again.
// Removing a key that is not set is not an error.
func Unset(home, key string) error {
	f := schema().lookup(key)
	return edit(home, key, isStrictHostKey(key), func(cfg, sec *editFile) error {
		if f == nil && !cfg.has(key) && !sec.has(key) {
			return unknownKeyError(key)
		}
		names := []string{key}
		if f != nil {
			names = append(names, otherNames(f)...)
		}
		return removeFrom([]*editFile{cfg, sec}, names...)
	})
}

// removeFrom removes every name from every file (absent ones are no error).
func removeFrom(files []*editFile, names ...string) error {
	for _, name := range names {
		for _, ef := range files {
			if err := ef.remove(name); err != nil {
				return err
			}
		}
	}
	return nil
}

// isStrictHostKey: when the user touches the proxy bind or its key, a
// Python-style 0.0.0.0 must be rejected, not silently downgraded.
func isStrictHostKey(key string) bool {
	return key == "proxy" || key == "proxy.host" || key == "proxy.api_key"
}

func firstLeaf(f *field) *field {
	for f.kind == kSection {
		f = f.children[0]
	}
	return f
}

// otherNames lists the keys naming the same setting as f (see `sameas`).
func otherNames(f *field) []string {
	var out []string
	for _, g := range schema().leaves {
		if g == f {
			continue
		}
		if g.sameAs == f.path || (f.sameAs != "" && (g.path == f.sameAs || g.sameAs == f.sameAs)) {
			out = append(out, g.path)
		}
	}
	return out
}

// edit loads both files, refuses to touch broken ones, applies change,
// validates the result as Load would see it, and writes changed files atomically.
func edit(home, key string, strictHost bool, change func(cfg, sec *editFile) error) error {
	editMu.Lock()
	defer editMu.Unlock()
	if home == "" {
		h, err := Home()
		if err != nil {
			return err
		}
		home = h
	}
	if err := CheckHome(home); err != nil {
		return err
	}
	cfg, err := openEditFile(filepath.Join(home, ConfigFile))
	if err != nil {
		return err
	}
	sec, err := openEditFile(filepath.Join(home, SecretsFile))
	if err != nil {
		return err
	}
	// A file we cannot parse is never rewritten: the user's text would be lost.
	for _, ef := range []*editFile{cfg, sec} {
		if ef.parseErr != nil {
			return fmt.Errorf("not changing %s: fix the file first (nothing was written): %w", ef.path, ef.parseErr)
		}
	}
	current, structural, _ := build(input{home: home, cfg: cfg.data, sec: sec.data, env: noEnv})
	if rest := structural.without(key); len(rest) > 0 {
		return fmt.Errorf("not changing the configuration: fix these problems first (nothing was written):\n%w", rest.err())
	}
	if err := change(cfg, sec); err != nil {
		return err
	}
	if !cfg.changed && !sec.changed {
		return nil
	}
	_, structural, invalid := build(input{home: home, cfg: cfg.out, sec: sec.out, env: os.LookupEnv, strictHost: strictHost})
	if errs := append(structural, invalid...); len(errs) > 0 {
		return fmt.Errorf("not saved, the result would be invalid (nothing was written):\n%w", relocate(errs, key, current).err())
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return wrapf(err, "create %s", home)
	}
	// Secrets first: if the second write fails, a moved secret exists twice
	// rather than nowhere.
	for _, ef := range []*editFile{sec, cfg} {
		if !ef.changed {
			continue
		}
		mode := ef.mode
		if ef == sec || !ef.exists || holdsSecrets(ef.out) {
			mode &^= 0o077
		}
		// A symlinked file is written at its target so dotfile managers keep working.
		if err := atomicfile.Write(atomicfile.Resolve(ef.path), ef.out, mode); err != nil {
			return err
		}
	}
	return nil
}

// relocate points the errors of a rejected edit at what the user can see.
// The lines in them are those of the text that was not written: the value
// being set is named by its key alone (it is not in the file), and a
// problem elsewhere gets its line in the file as it is now (or none).
func relocate(errs errList, key string, current *Config) errList {
	out := make(errList, 0, len(errs))
	for _, e := range errs {
		var ce *Error
		if !errors.As(e, &ce) || ce.File == "" {
			out = append(out, e)
			continue
		}
		moved := *ce
		if ce.Key == key || strings.HasPrefix(ce.Key, key+".") {
			moved.File, moved.Line = "", 0
		} else if loc, ok := current.loc[ce.Key]; ok && loc.file == ce.File {
			moved.Line = loc.line
		} else {
			moved.Line = 0
		}
		out = append(out, &moved)
	}
	return out
}

// holdsSecrets reports whether a config.yaml text sets any secret key.
func holdsSecrets(data []byte) bool {
	c := base("")
	var errs errList
	decodeFile(c, ConfigFile, "config", false, data, &errs)
	return len(c.fileSecrets["config"]) > 0
}
