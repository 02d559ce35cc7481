package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Error is one problem found in the configuration. Load, Validate, Set and
// Unset return these (several joined with errors.Join); use errors.As to get
// at the key or position.
type Error struct {
	File string // file the problem is in; empty for env or programmatic values
	Line int    // 1-based line in File, 0 if unknown
	Key  string // dotted key path, empty for whole-file problems
	Env  string // environment variable the bad value came from, if any
	Msg  string // what is wrong and how to fix it
	Err  error  // underlying error, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		b.WriteString(e.File + ":" + strconv.Itoa(e.Line) + ": ")
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Env != "":
		b.WriteString("env " + e.Env + ": ")
	}
	if e.Key != "" {
		b.WriteString("`" + e.Key + "`: ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// errList collects problems so that one run reports all of them.
type errList []error

func (l *errList) add(e error) { *l = append(*l, e) }

func (l errList) err() error { return errors.Join(l...) }

// filter drops the errors about key (or keys below it): Set/Unset may
// replace exactly the value that is broken.
func (l errList) without(key string) errList {
	var out errList
	for _, e := range l {
		var ce *Error
		if errors.As(e, &ce) && ce.Key != "" && (ce.Key == key || strings.HasPrefix(ce.Key, key+".")) {
			continue
		}
		out = append(out, e)
	}
	return out
}

func wrapf(err error, format string, a ...any) error {
	return fmt.Errorf(format+": %w", append(a, err)...)
}
