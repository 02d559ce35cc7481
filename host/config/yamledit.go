package config

import (
	"errors"
	"io/fs"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/metaclaw-go/metaclaw/internal/yamledit"
)

// editFile is one of config.yaml / secrets.yaml during Set or Unset. The
// comment-keeping edits themselves are internal/yamledit's checked Doc
// (the project's one YAML editor), opened on first use.
type editFile struct {
	path     string
	data     []byte // as read; nil when the file does not exist
	exists   bool
	mode     fs.FileMode
	parseErr error
	doc      *yamledit.Doc // nil until the first edit
	out      []byte        // current text after the edits so far
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

// editor is the file's Doc, writing new strings the way the YAML library
// does (the value nodes already quote what PyYAML would misread).
func (ef *editFile) editor() (*yamledit.Doc, error) {
	if ef.doc == nil {
		d, err := yamledit.Open(ef.out)
		if err != nil {
			return nil, wrapf(err, "edit %s", ef.path)
		}
		d.SetQuoting(yamledit.QuoteMinimal)
		ef.doc = d
	}
	return ef.doc, nil
}

func (ef *editFile) has(key string) bool {
	d, err := ef.editor()
	return err == nil && d.Has(strings.Split(key, "."))
}

func (ef *editFile) set(key string, val *yaml.Node) error {
	d, err := ef.editor()
	if err != nil {
		return err
	}
	if err := d.Set(strings.Split(key, "."), val); err != nil {
		return ef.editError(key, err)
	}
	ef.out, ef.changed = d.Bytes(), true
	return nil
}

// remove deletes key (and a section left empty); an absent key is no error.
func (ef *editFile) remove(key string) error {
	d, err := ef.editor()
	if err != nil {
		return err
	}
	changed, err := d.Delete(strings.Split(key, "."))
	if err != nil {
		return ef.editError(key, err)
	}
	if changed {
		ef.out, ef.changed = d.Bytes(), true
	}
	return nil
}

// editError names the file and key of a refused edit.
func (ef *editFile) editError(key string, err error) error {
	var pe *yamledit.PathError
	if errors.As(err, &pe) {
		return &Error{File: ef.path, Key: key, Msg: pe.Msg}
	}
	return wrapf(err, "edit %s", ef.path)
}
