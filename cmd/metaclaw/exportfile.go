package main

import (
	"bytes"
	"io"

	"github.com/metaclaw-go/metaclaw/internal/atomicfile"
)

// writeExport runs fill into w when out is "" or "-", else into the file out,
// written whole (temp file + rename, mode 0600: memories can be private) so
// a failed export never leaves a truncated file in place of an earlier one.
func writeExport(w io.Writer, out string, fill func(io.Writer) error) error {
	if out == "" || out == "-" {
		return fill(w)
	}
	var buf bytes.Buffer
	if err := fill(&buf); err != nil {
		return err
	}
	return atomicfile.Write(out, buf.Bytes(), 0o600)
}
