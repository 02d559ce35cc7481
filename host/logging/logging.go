// Package logging builds the host's zerolog logger: human-readable lines on
// stderr and JSON lines in a size-rotated file under $METACLAW_HOME/logs.
package logging

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"gopkg.in/natefinch/lumberjack.v2"
)

// Options says where and how much to log.
type Options struct {
	Dir        string // log directory; empty disables the file
	Level      string // debug|info|warn|error
	MaxSizeMB  int
	MaxBackups int
	Stderr     io.Writer // nil means os.Stderr; io.Discard silences it
	JSONStderr bool      // plain JSON on stderr (daemon mode, where stderr is itself a file)
}

// FileName is the rotated log file inside Options.Dir.
const FileName = "metaclaw.log"

// New returns a logger and a closer for its file.
func New(o Options) (zerolog.Logger, io.Closer, error) {
	level, err := zerolog.ParseLevel(strings.ToLower(o.Level))
	if err != nil || o.Level == "" {
		level = zerolog.InfoLevel
	}
	stderr := o.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	var writers []io.Writer
	if o.JSONStderr {
		writers = append(writers, stderr)
	} else {
		writers = append(writers, zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.TimeOnly, NoColor: true})
	}
	var closer io.Closer = nopCloser{}
	if o.Dir != "" {
		if err := os.MkdirAll(o.Dir, 0o700); err != nil {
			return zerolog.Nop(), nil, fmt.Errorf("create log dir %s: %w", o.Dir, err)
		}
		lj := &lumberjack.Logger{
			Filename:   filepath.Join(o.Dir, FileName),
			MaxSize:    max(o.MaxSizeMB, 1),
			MaxBackups: max(o.MaxBackups, 1),
			Compress:   false,
		}
		writers = append(writers, lj)
		closer = lj
	}
	logger := zerolog.New(zerolog.MultiLevelWriter(writers...)).Level(level).With().Timestamp().Logger()
	return logger, closer, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
