package config

import (
	"errors"
	"io/fs"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/metaclaw-go/metaclaw/internal/yamledit"
)

// editFile is one of config.yaml / secrets.yaml during Set or Unset. The
// comment-keeping edits themselves are internal/yamledit's.
type editFile struct {
	path     string
	data     []byte // as read; nil when the file does not exist
	exists   bool
	mode     fs.FileMode
	parseErr error
	out      []byte // current text after the edits so far
	changed  bool
}

func openEditFile(path string) (*editFile, error) {
	data, mode, err := readOptional(path)
	if err != nil {
		return nil, err
	}
	ef := &editFile{path: path, data: data, exists: data != nil, mode: mode, out: data}
	if !ef.exists {
		ef.mode = 0o600
	}
	if data != nil {
		doc, err := parseYAML(path, data)
		if err == nil {
			if _, rerr := docRoot(path, doc); rerr != nil {
				err = rerr
			}
		}
		if err != nil {
			ef.parseErr = err
		}
	}
	return ef, nil
}

func (ef *editFile) has(key string) bool {
	return yamledit.Has(ef.out, strings.Split(key, "."))
}

func (ef *editFile) set(key string, val *yaml.Node) error {
	out, err := yamledit.Set(ef.out, strings.Split(key, "."), val)
	if err != nil {
		var pe *yamledit.PathError
		if errors.As(err, &pe) {
			return &Error{File: ef.path, Key: key, Msg: pe.Msg}
		}
		return wrapf(err, "edit %s", ef.path)
	}
	ef.out, ef.changed = out, true
	return nil
}

func (ef *editFile) remove(key string) {
	out, changed, err := yamledit.Delete(ef.out, strings.Split(key, "."))
	if err != nil || !changed {
		return
	}
	ef.out, ef.changed = out, true
}
