package completion_test

import (
	"encoding/json"
	"net/http"
)

func decodeJSON(r *http.Request, v any) error { return json.NewDecoder(r.Body).Decode(v) }

func jsonUnmarshal(data any, v any) error {
	switch d := data.(type) {
	case string:
		return json.Unmarshal([]byte(d), v)
	case json.RawMessage:
		return json.Unmarshal(d, v)
	case []byte:
		return json.Unmarshal(d, v)
	}
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
