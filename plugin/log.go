package plugin

import (
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
)

// LogFile is the plugin processes' log under $METACLAW_HOME/logs (JSON
// lines, appended by every plugin process; trimmed when it grows large).
const LogFile = "plugin.log"

const maxLogBytes = 8 << 20

// NewLogger logs warnings and errors to stderr (never stdout: stdout
// carries protocol) and everything from level on to logs/plugin.log.
func NewLogger(home, level, component string) (zerolog.Logger, io.Closer) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		lvl = zerolog.InfoLevel
	}
	writers := []io.Writer{levelFilter{w: zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly, NoColor: true}, min: max(lvl, zerolog.WarnLevel)}}
	var closer io.Closer = nopCloser{}
	if home != "" {
		dir := filepath.Join(home, "logs")
		if os.MkdirAll(dir, 0o700) == nil {
			path := filepath.Join(dir, LogFile)
			if fi, err := os.Stat(path); err == nil && fi.Size() > maxLogBytes {
				os.Rename(path, path+".1")
			}
			if f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
				writers = append(writers, levelFilter{w: f, min: lvl})
				closer = f
			}
		}
	}
	log := zerolog.New(zerolog.MultiLevelWriter(writers...)).Level(lvl).With().
		Timestamp().Str("part", component).Int("pid", os.Getpid()).Logger()
	return log, closer
}

type levelFilter struct {
	w   io.Writer
	min zerolog.Level
}

func (l levelFilter) Write(p []byte) (int, error) { return l.w.Write(p) }

func (l levelFilter) WriteLevel(level zerolog.Level, p []byte) (int, error) {
	if level < l.min {
		return len(p), nil
	}
	return l.w.Write(p)
}
