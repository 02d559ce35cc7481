package subplugin

import (
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

// hclogAdapter lets go-plugin (which logs through hclog) log into the host's
// zerolog logger. go-plugin also re-logs each JSON line a plugin writes on
// stderr through it, under the plugin's executable name.
type hclogAdapter struct {
	z       zerolog.Logger
	name    string
	implied []any
}

func newHclog(z zerolog.Logger) hclog.Logger { return &hclogAdapter{z: z} }

var _ hclog.Logger = (*hclogAdapter)(nil)

func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	var e *zerolog.Event
	switch level {
	case hclog.Trace:
		e = a.z.Trace()
	case hclog.Debug, hclog.NoLevel, hclog.Off:
		e = a.z.Debug()
	case hclog.Info:
		e = a.z.Info()
	case hclog.Warn:
		e = a.z.Warn()
	default:
		e = a.z.Error()
	}
	if e == nil {
		return
	}
	if a.name != "" {
		e = e.Str("plugin_logger", a.name)
	}
	e.Fields(pairs(a.implied, args)).Msg(msg)
}

// pairs turns hclog's alternating key/value arguments into zerolog fields.
func pairs(implied, args []any) []any {
	all := append(append([]any(nil), implied...), args...)
	out := make([]any, 0, len(all)+1)
	for i := 0; i < len(all); i += 2 {
		k := fmt.Sprint(all[i])
		if i+1 >= len(all) {
			out = append(out, "extra", k)
			break
		}
		v := all[i+1]
		if err, ok := v.(error); ok && err != nil {
			v = err.Error()
		}
		out = append(out, k, v)
	}
	return out
}

func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) IsTrace() bool { return a.z.GetLevel() <= zerolog.TraceLevel }
func (a *hclogAdapter) IsDebug() bool { return a.z.GetLevel() <= zerolog.DebugLevel }
func (a *hclogAdapter) IsInfo() bool  { return a.z.GetLevel() <= zerolog.InfoLevel }
func (a *hclogAdapter) IsWarn() bool  { return a.z.GetLevel() <= zerolog.WarnLevel }
func (a *hclogAdapter) IsError() bool { return a.z.GetLevel() <= zerolog.ErrorLevel }

func (a *hclogAdapter) ImpliedArgs() []any { return a.implied }

func (a *hclogAdapter) With(args ...any) hclog.Logger {
	c := *a
	c.implied = append(append([]any(nil), a.implied...), args...)
	return &c
}

func (a *hclogAdapter) Name() string { return a.name }

func (a *hclogAdapter) Named(name string) hclog.Logger {
	c := *a
	if c.name != "" {
		c.name += "." + name
	} else {
		c.name = name
	}
	return &c
}

func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	c := *a
	c.name = name
	return &c
}

// SetLevel is ignored: the host's log level decides.
func (a *hclogAdapter) SetLevel(hclog.Level) {}

func (a *hclogAdapter) GetLevel() hclog.Level {
	switch l := a.z.GetLevel(); {
	case l <= zerolog.TraceLevel:
		return hclog.Trace
	case l == zerolog.DebugLevel:
		return hclog.Debug
	case l == zerolog.InfoLevel:
		return hclog.Info
	case l == zerolog.WarnLevel:
		return hclog.Warn
	case l == zerolog.Disabled:
		return hclog.Off
	default:
		return hclog.Error
	}
}

func (a *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(a.StandardWriter(opts), "", 0)
}

func (a *hclogAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		a.Info(strings.TrimRight(string(p), "\n"))
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
