package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
)

// StreamOptions tune a Stream.
type StreamOptions struct {
	// MaxMessage bounds one line in bytes (default DefaultMaxMessage).
	MaxMessage int
	// Server makes the stream answer malformed lines itself (parse error,
	// invalid request, too large) and keep reading; a client stream only
	// drops them.
	Server bool
	// BeforeEOF runs once when the reader reaches EOF, before the connection
	// learns about it: servers use it to let in-flight requests answer (the
	// jsonrpc2 connection closes its write side on EOF).
	BeforeEOF func()
	// Log receives one line per dropped message (optional).
	Log func(msg string)
}

// Stream is a jsonrpc2.ObjectStream over newline-delimited JSON that never
// lets one bad message close the connection.
type Stream struct {
	r       *bufio.Reader
	w       io.Writer
	c       io.Closer
	o       StreamOptions
	wmu     sync.Mutex
	eofOnce sync.Once
}

// NewStream reads from r and writes to w; Close closes c (may be nil).
func NewStream(r io.Reader, w io.Writer, c io.Closer, o StreamOptions) *Stream {
	if o.MaxMessage <= 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	return &Stream{r: bufio.NewReaderSize(r, 64<<10), w: w, c: c, o: o}
}

// WriteObject writes obj as one JSON line.
func (s *Stream) WriteObject(obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return s.writeLine(b)
}

func (s *Stream) writeLine(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	buf := make([]byte, 0, len(b)+1)
	buf = append(append(buf, b...), '\n')
	_, err := s.w.Write(buf)
	return err
}

// Close closes the underlying connection.
func (s *Stream) Close() error {
	if s.c == nil {
		return nil
	}
	return s.c.Close()
}

// ReadObject reads the next well-formed JSON-RPC message into v, answering
// (server) or dropping (client) anything else on the way.
func (s *Stream) ReadObject(v any) error {
	for {
		line, err := s.readLine()
		if errors.Is(err, errTooLarge) {
			s.reject(nil, CodeTooLarge, "message larger than "+strconv.Itoa(s.o.MaxMessage)+" bytes")
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) && s.o.BeforeEOF != nil {
				s.eofOnce.Do(s.o.BeforeEOF)
			}
			return err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if id, code, msg, ok := Check(line); !ok {
			s.reject(id, code, msg)
			continue
		}
		if err := json.Unmarshal(line, v); err != nil {
			s.reject(nil, CodeInvalidRequest, "invalid request: "+err.Error())
			continue
		}
		return nil
	}
}

var errTooLarge = errors.New("message too large")

// readLine returns one line without its newline; a line longer than the
// limit is consumed and reported as errTooLarge. A final line without a
// newline is returned before EOF.
func (s *Stream) readLine() ([]byte, error) {
	var buf []byte
	tooLarge := false
	for {
		chunk, err := s.r.ReadSlice('\n')
		if !tooLarge {
			if len(buf)+len(chunk) > s.o.MaxMessage+1 {
				tooLarge, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLarge {
				return nil, errTooLarge
			}
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if tooLarge {
				return nil, errTooLarge
			}
			if len(bytes.TrimSpace(buf)) > 0 {
				return buf, nil
			}
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

func (s *Stream) reject(id json.RawMessage, code int64, msg string) {
	if s.o.Log != nil {
		s.o.Log(msg)
	}
	if !s.o.Server {
		return
	}
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	resp := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id}
	resp.Error.Code, resp.Error.Message = code, msg
	b, _ := json.Marshal(resp)
	_ = s.writeLine(b)
}

// Check validates one line as a JSON-RPC 2.0 request, notification or
// response that sourcegraph/jsonrpc2 will accept. On failure it returns the
// request id to answer (if one could be read), an error code and a message.
func Check(line []byte) (id json.RawMessage, code int64, msg string, ok bool) {
	if !json.Valid(line) {
		return nil, CodeParseError, "parse error: not valid JSON", false
	}
	switch line[0] {
	case '{':
	case '[':
		return nil, CodeInvalidRequest, "invalid request: batches are not supported", false
	default:
		return nil, CodeInvalidRequest, "invalid request: a message must be a JSON object", false
	}
	var probe struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		return nil, CodeInvalidRequest, "invalid request: " + err.Error(), false
	}
	if validID(probe.ID) {
		id = probe.ID
	}
	if probe.JSONRPC != nil && *probe.JSONRPC != "2.0" {
		return id, CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`, false
	}
	if string(probe.Error) == "null" {
		probe.Error = nil
	}
	if len(probe.Method) == 0 {
		if len(probe.Result) == 0 && len(probe.Error) == 0 {
			return id, CodeInvalidRequest, `invalid request: no "method"`, false
		}
		if len(probe.Method) == 0 && !validID(probe.ID) {
			return nil, CodeInvalidRequest, "invalid response: bad id", false
		}
		return id, 0, "", true
	}
	if len(probe.Result) > 0 || len(probe.Error) > 0 {
		return id, CodeInvalidRequest, `invalid request: "method" together with "result"/"error"`, false
	}
	var method string
	if probe.Method[0] != '"' || json.Unmarshal(probe.Method, &method) != nil {
		return id, CodeInvalidRequest, `invalid request: "method" must be a string`, false
	}
	if len(probe.ID) > 0 && !validID(probe.ID) {
		return nil, CodeInvalidRequest, `invalid request: "id" must be a string, an integer or null`, false
	}
	if p := bytes.TrimSpace(probe.Params); len(p) > 0 && p[0] != '{' && p[0] != '[' && string(p) != "null" {
		return id, CodeInvalidParams, `invalid params: "params" must be an object or an array`, false
	}
	return id, 0, "", true
}

// validID accepts what jsonrpc2 can read back: a string, a non-negative
// integer (as int64), or null.
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	switch raw[0] {
	case 'n':
		return string(raw) == "null"
	case '"':
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil && n >= 0
}
