package apiformat

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// maxErrorMessage bounds a message taken from a non-JSON upstream body (an
// HTML error page from a load balancer, say).
const maxErrorMessage = 2048

// openAIErrorType picks the OpenAI error "type" for an HTTP status. OpenAI's
// own types are open-ended strings (server failures are "server_error"); we
// use descriptive names where OpenAI has none so clients can still switch
// on them, but never an Anthropic-only one:
//
//	400, 409, 422, other 4xx  invalid_request_error
//	401                       authentication_error
//	402                       insufficient_quota
//	403                       permission_error
//	404                       not_found_error
//	408, 504                  timeout_error
//	413                       request_too_large
//	429                       rate_limit_error
//	502                       upstream_error
//	500, 503, 529, other 5xx  server_error
func openAIErrorType(status int) string {
	switch status {
	case 401:
		return "authentication_error"
	case 402:
		return "insufficient_quota"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 408, 504:
		return "timeout_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 502:
		return "upstream_error"
	}
	if status >= 500 {
		return "server_error"
	}
	return "invalid_request_error"
}

// openAIType keeps an upstream's error type in the OpenAI format, except
// Anthropic's own names, which OpenAI clients do not know: those become
// OpenAI's equivalent.
func openAIType(typ string, status int) string {
	switch typ {
	case "":
		return openAIErrorType(status)
	case "overloaded_error", "api_error":
		return "server_error"
	case "billing_error":
		return "insufficient_quota"
	}
	return typ
}

// anthropicErrorStatusType maps an HTTP status to one of Anthropic's error
// types (https://docs.anthropic.com/en/api/errors).
func anthropicErrorStatusType(status int) string {
	switch status {
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 408, 504:
		return "timeout_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 503, 529:
		return "overloaded_error"
	}
	if status >= 500 || status == 0 {
		return "api_error"
	}
	return "invalid_request_error"
}

// anthropicErrorType keeps typ when Anthropic knows it, maps common OpenAI
// types, and otherwise falls back to the status.
func anthropicErrorType(typ string, status int) string {
	switch typ {
	case "invalid_request_error", "authentication_error", "billing_error", "permission_error",
		"not_found_error", "request_too_large", "rate_limit_error", "api_error",
		"overloaded_error", "timeout_error":
		return typ
	case "server_error", "upstream_error":
		return "api_error"
	case "insufficient_quota":
		return "billing_error"
	case "invalid_api_key":
		return "authentication_error"
	case "tokens", "requests", "rate_limit_exceeded":
		return "rate_limit_error"
	}
	return anthropicErrorStatusType(status)
}

// ErrorBody returns an error body in api's format for status. Any api other
// than Anthropic gets the OpenAI format. OpenAI's "code" is null: the status
// alone does not tell which specific code would be true.
func ErrorBody(api API, status int, message string) []byte {
	if message == "" {
		message = http.StatusText(status)
	}
	if api == Anthropic {
		return anthropicErrorBody(anthropicErrorStatusType(status), message)
	}
	return openAIErrorBody(openAIErrorType(status), message)
}

func anthropicErrorBody(typ, msg string) []byte {
	b := make([]byte, 0, 64+len(typ)+len(msg))
	b = append(b, `{"type":"error","error":{"type":`...)
	b = appendString(b, typ)
	b = append(b, `,"message":`...)
	b = appendString(b, msg)
	return append(b, "}}"...)
}

func openAIErrorBody(typ, msg string) []byte {
	b := make([]byte, 0, 80+len(typ)+len(msg))
	b = append(b, `{"error":{"message":`...)
	b = appendString(b, msg)
	b = append(b, `,"type":`...)
	b = appendString(b, typ)
	return append(b, `,"param":null,"code":null}}`...)
}

// openAIErrorFields reads message and type from an OpenAI "error" value,
// which is normally an object but is a bare string on some servers.
func openAIErrorFields(raw json.RawMessage) (msg, typ string) {
	switch jsonKind(raw) {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return s, ""
	case '{':
		var e oaiErrorObj
		if json.Unmarshal(raw, &e) == nil {
			return string(e.Message), string(e.Type)
		}
	}
	return "", ""
}

// errorEnvelope decodes the error shapes seen in the wild: OpenAI
// {"error":{...}} or {"error":"..."}, Anthropic {"type":"error","error":{...}},
// and plain {"message":...} / {"detail":...} from generic servers.
type errorEnvelope struct {
	Error   json.RawMessage `json:"error"`
	Message looseString     `json:"message"`
	Detail  looseString     `json:"detail"`
}

// TranslateErrorBody rewrites an upstream error body in format from into
// format to, keeping the message and, where the target knows it, the type.
// A body that is not a recognisable JSON error becomes the message itself,
// cut to 2 KB; an empty body becomes the status text.
func TranslateErrorBody(from, to API, status int, body []byte) []byte {
	var msg, typ string
	recognised, envelope := false, false
	trimmed := bytes.TrimSpace(body)
	if jsonKind(trimmed) == '{' {
		var env errorEnvelope
		if json.Unmarshal(trimmed, &env) == nil {
			switch jsonKind(env.Error) {
			case '{':
				var e oaiErrorObj
				if json.Unmarshal(env.Error, &e) == nil {
					msg, typ = string(e.Message), string(e.Type)
					recognised = msg != "" || typ != ""
					envelope = msg != ""
				}
			case '"':
				_ = json.Unmarshal(env.Error, &msg)
				recognised = msg != ""
			}
			if !recognised {
				if env.Message != "" {
					msg, recognised = string(env.Message), true
				} else if env.Detail != "" {
					msg, recognised = string(env.Detail), true
				}
			}
		}
	}
	if envelope && from == to {
		return body // already a proper error in the client's format
	}
	if !recognised {
		msg = strings.TrimSpace(textclip.Prefix(string(trimmed), maxErrorMessage))
	}
	if msg == "" {
		msg = http.StatusText(status)
		if msg == "" {
			msg = "upstream error"
		}
	}
	if to == Anthropic {
		return anthropicErrorBody(anthropicErrorType(typ, status), msg)
	}
	return openAIErrorBody(openAIType(typ, status), msg)
}
