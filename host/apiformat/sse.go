package apiformat

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"sync"
)

// Event is one server-sent event: its `event:` name (may be empty) and its
// `data:` lines joined with "\n".
type Event struct {
	Name string
	Data []byte
}

// Size limits. A single data line may hold a whole tool call with a file in it,
// so lines up to 32 MiB are accepted; beyond that the stream is refused rather
// than buffered without bound.
const (
	maxLineSize  = 32 << 20
	maxEventSize = 64 << 20
	// Buffers grown past this by one big event are dropped afterwards so a
	// long-lived reader does not pin them.
	keepBufSize = 1 << 20
)

// ErrTooLong is returned by SSEReader.Next when a line or an event exceeds the limits.
var ErrTooLong = errors.New("apiformat: SSE line or event too long")

// SSEReader reads server-sent events. It follows the WHATWG parsing rules
// for lines ending in "\n" or "\r\n" (a lone "\r" is not a line end: no LLM
// server sends one), skips comment lines (":"), joins multi-line data, and
// ignores id/retry. Unlike a browser it also dispatches a final event that
// lacks the closing blank line, since some servers end the body right after
// "data: [DONE]\n".
type SSEReader struct {
	br      *bufio.Reader
	long    []byte // line assembly when a line exceeds the bufio buffer
	data    []byte
	name    string
	hasData bool
	started bool
	err     error
	// sizeHint is the buffer to start a long data line with: about the size
	// of the previous event when it was large.
	sizeHint int
}

// NewSSEReader returns a reader of the events in r.
func NewSSEReader(r io.Reader) *SSEReader {
	return newSSEReaderSize(r, 16<<10)
}

func newSSEReaderSize(r io.Reader, size int) *SSEReader {
	return &SSEReader{br: bufio.NewReaderSize(r, size)}
}

// readLine returns the next line without its terminator. The slice is valid
// until the next call. err is io.EOF only together with the last (partial)
// line or an empty one. A data line longer than the read buffer is appended
// to the event as it arrives (one copy, however large) and reported as
// handled instead.
func (r *SSEReader) readLine() (line []byte, handled bool, err error) {
	line, err = r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		if r.started && bytes.HasPrefix(line, []byte("data:")) {
			return nil, true, r.longData(line)
		}
		r.long = append(r.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = r.br.ReadSlice('\n')
			if len(r.long)+len(line) > maxLineSize {
				return nil, false, ErrTooLong
			}
			r.long = append(r.long, line...)
		}
		line = r.long
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	} else if n > 0 && line[n-1] == '\r' && err == io.EOF {
		line = line[:n-1]
	}
	return line, false, err
}

// longData appends a data line that does not fit the read buffer straight
// to the event's data; first is its first buffer-full.
func (r *SSEReader) longData(first []byte) error {
	value := first[len("data:"):]
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	if r.hasData {
		r.data = append(r.data, '\n')
	}
	r.hasData = true
	if r.sizeHint > cap(r.data) {
		r.data = append(make([]byte, 0, r.sizeHint), r.data...)
	}
	r.data = append(r.data, value...)
	total := len(first)
	for {
		chunk, err := r.br.ReadSlice('\n')
		total += len(chunk)
		if total > maxLineSize || len(r.data)+len(chunk) > maxEventSize {
			return ErrTooLong
		}
		r.data = append(r.data, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		// The line's terminator (or a final lone CR at the end of the
		// stream) may have arrived split over the last two pieces.
		if n := len(r.data); n > 0 && r.data[n-1] == '\n' {
			r.data = r.data[:n-1]
			if n := len(r.data); n > 0 && r.data[n-1] == '\r' {
				r.data = r.data[:n-1]
			}
		} else if n > 0 && r.data[n-1] == '\r' && err == io.EOF {
			r.data = r.data[:n-1]
		}
		return err
	}
}

// Next returns the next event, or io.EOF at the end of the stream.
func (r *SSEReader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	for {
		line, handled, err := r.readLine()
		if err != nil && err != io.EOF {
			r.err = err
			return Event{}, err
		}
		if handled {
			// A long data line, already in the event.
		} else {
			if !r.started && (len(line) > 0 || err == nil) {
				r.started = true
				line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // BOM
			}
			if len(line) == 0 {
				if r.hasData {
					ev := r.dispatch()
					if err == io.EOF {
						r.err = io.EOF
					}
					return ev, nil
				}
				r.name = ""
			} else if line[0] != ':' {
				if ferr := r.field(line); ferr != nil {
					r.err = ferr
					return Event{}, ferr
				}
			}
		}
		if err == io.EOF {
			r.err = io.EOF
			if r.hasData {
				return r.dispatch(), nil
			}
			return Event{}, io.EOF
		}
		if len(r.long) > keepBufSize {
			r.long = nil
		}
	}
}

func (r *SSEReader) field(line []byte) error {
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		if r.hasData {
			r.data = append(r.data, '\n')
		}
		if len(r.data)+len(value) > maxEventSize {
			return ErrTooLong
		}
		r.data = append(r.data, value...)
		r.hasData = true
	case "event":
		r.name = eventName(value)
	}
	return nil
}

// eventName interns the names we see on every event to avoid an allocation each.
func eventName(b []byte) string {
	switch string(b) {
	case "message_start":
		return "message_start"
	case "content_block_start":
		return "content_block_start"
	case "content_block_delta":
		return "content_block_delta"
	case "content_block_stop":
		return "content_block_stop"
	case "message_delta":
		return "message_delta"
	case "message_stop":
		return "message_stop"
	case "ping":
		return "ping"
	case "error":
		return "error"
	}
	return string(b)
}

func (r *SSEReader) dispatch() Event {
	var ev Event
	if len(r.data) > keepBufSize {
		// A large event keeps its buffer (no copy); the next one starts a
		// buffer of about its size, so a stream of large events grows none.
		ev = Event{Name: r.name, Data: r.data}
		r.sizeHint = len(r.data) + len(r.data)/8
		r.data = nil
	} else {
		ev = Event{Name: r.name, Data: bytes.Clone(r.data)}
		r.sizeHint = 0
		if cap(r.data) > keepBufSize {
			r.data = nil
		} else {
			r.data = r.data[:0]
		}
	}
	if ev.Data == nil {
		ev.Data = []byte{}
	}
	r.name = ""
	r.hasData = false
	return ev
}

var writeBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// WriteEvent writes ev as one SSE event (`event: X` when named, one `data:`
// line per line of Data, then a blank line) in a single Write, so a flushing
// writer never sends half an event. Line breaks in Name are replaced by spaces
// so a name cannot inject fields.
func WriteEvent(w io.Writer, ev Event) error {
	bp := writeBufPool.Get().(*[]byte)
	buf := (*bp)[:0]
	if ev.Name != "" {
		buf = append(buf, "event: "...)
		for i := 0; i < len(ev.Name); i++ {
			c := ev.Name[i]
			if c == '\n' || c == '\r' {
				c = ' '
			}
			buf = append(buf, c)
		}
		buf = append(buf, '\n')
	}
	data := ev.Data
	buf = slices.Grow(buf, len(data)+16)
	cr := bytes.IndexByte(data, '\r') // the next CR, kept so each byte is scanned once
	for {
		i := bytes.IndexByte(data, '\n')
		if cr >= 0 && (i < 0 || cr < i) {
			i = cr
		}
		buf = append(buf, "data: "...)
		if i < 0 {
			buf = append(buf, data...)
			buf = append(buf, '\n')
			break
		}
		buf = append(buf, data[:i]...)
		buf = append(buf, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
		if cr >= 0 {
			if cr -= i + 1; cr < 0 {
				cr = bytes.IndexByte(data, '\r')
			}
		}
	}
	buf = append(buf, '\n')
	_, err := w.Write(buf)
	if cap(buf) <= keepBufSize {
		*bp = buf
		writeBufPool.Put(bp)
	}
	return err
}
