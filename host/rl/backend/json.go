package backend

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// The JSON forms below are Tinker's (Weaver uses the same datum shape).
// Encoding is hand-written because a training batch is hundreds of thousands
// of numbers: AppendJSON writes straight into one buffer.

// AppendJSON appends t as {"data":[…],"dtype":"…","shape":[…]}. Non-finite
// floats are an error (JSON cannot carry them; Tinker rejects them).
func (t TensorData) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"data":[`...)
	switch t.DType {
	case Int64:
		for i, v := range t.Ints {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, v, 10)
		}
	case Float32:
		for i, v := range t.Floats {
			if i > 0 {
				b = append(b, ',')
			}
			f := float64(v)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return b, fmt.Errorf("element %d is %v: tensors must be finite", i, v)
			}
			b = strconv.AppendFloat(b, f, 'g', -1, 32)
		}
	default:
		return b, fmt.Errorf("unknown dtype %q", t.DType)
	}
	b = append(b, `],"dtype":"`...)
	b = append(b, t.DType...)
	b = append(b, `","shape":[`...)
	shape := t.Shape
	if shape == nil {
		shape = []int{t.Len()}
	}
	for i, d := range shape {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(d), 10)
	}
	return append(b, "]}"...), nil
}

// MarshalJSON implements json.Marshaler.
func (t TensorData) MarshalJSON() ([]byte, error) { return t.AppendJSON(nil) }

type tensorWire struct {
	Data  []float64 `json:"data"`
	DType DType     `json:"dtype"`
	Shape []int     `json:"shape,omitempty"`
}

// UnmarshalJSON implements json.Unmarshaler (lenient: extra fields such as
// sparse indices are ignored).
func (t *TensorData) UnmarshalJSON(b []byte) error {
	var w tensorWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*t = TensorData{DType: w.DType, Shape: w.Shape}
	switch w.DType {
	case Int64, "int32":
		t.DType = Int64
		t.Ints = make([]int64, len(w.Data))
		for i, v := range w.Data {
			t.Ints[i] = int64(v)
		}
	case Float32, "float64", "bfloat16", "":
		t.DType = Float32
		t.Floats = make([]float32, len(w.Data))
		for i, v := range w.Data {
			t.Floats[i] = float32(v)
		}
	default:
		return fmt.Errorf("unknown dtype %q", w.DType)
	}
	return nil
}

// AppendJSON appends m as {"chunks":[{"type":"encoded_text","tokens":[…]}]}.
func (m ModelInput) AppendJSON(b []byte) []byte {
	b = append(b, `{"chunks":[`...)
	for i, c := range m.Chunks {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"tokens":[`...)
		for j, t := range c.Tokens {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(t), 10)
		}
		b = append(b, `],"type":"encoded_text"}`...)
	}
	return append(b, "]}"...)
}

// MarshalJSON implements json.Marshaler.
func (m ModelInput) MarshalJSON() ([]byte, error) { return m.AppendJSON(nil), nil }

// UnmarshalJSON implements json.Unmarshaler; only encoded_text chunks are
// understood.
func (m *ModelInput) UnmarshalJSON(b []byte) error {
	var w struct {
		Chunks []struct {
			Type   string  `json:"type"`
			Tokens []int32 `json:"tokens"`
		} `json:"chunks"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	m.Chunks = make([]Chunk, len(w.Chunks))
	for i, c := range w.Chunks {
		if c.Type != "" && c.Type != "encoded_text" {
			return fmt.Errorf("chunk %d: unsupported chunk type %q", i, c.Type)
		}
		m.Chunks[i] = Chunk{Tokens: c.Tokens}
	}
	return nil
}

// AppendJSON appends d as {"loss_fn_inputs":{…},"model_input":{…}} with the
// inputs in name order.
func (d Datum) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"loss_fn_inputs":{`...)
	names := make([]string, 0, len(d.LossFnInputs))
	for k := range d.LossFnInputs {
		names = append(names, k)
	}
	sort.Strings(names)
	var err error
	for i, k := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, k)
		b = append(b, ':')
		if b, err = d.LossFnInputs[k].AppendJSON(b); err != nil {
			return b, fmt.Errorf("loss_fn_inputs %s: %w", k, err)
		}
	}
	b = append(b, `},"model_input":`...)
	b = d.ModelInput.AppendJSON(b)
	return append(b, '}'), nil
}

// MarshalJSON implements json.Marshaler.
func (d Datum) MarshalJSON() ([]byte, error) { return d.AppendJSON(nil) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Datum) UnmarshalJSON(b []byte) error {
	var w struct {
		ModelInput   ModelInput            `json:"model_input"`
		LossFnInputs map[string]TensorData `json:"loss_fn_inputs"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	d.ModelInput, d.LossFnInputs = w.ModelInput, w.LossFnInputs
	return nil
}

// EstimateJSONBytes estimates d's JSON size from its element counts (ids
// about 7 bytes, zeros 2, other floats 13), used to cut forward_backward
// requests into chunks and to size buffers; it is cheap and close, not exact.
func (d Datum) EstimateJSONBytes() int {
	n := 64 + 7*d.ModelInput.Len()
	for k, t := range d.LossFnInputs {
		n += len(k) + 48
		if t.DType == Int64 {
			n += 7 * len(t.Ints)
			continue
		}
		for _, f := range t.Floats {
			if f == 0 {
				n += 2
			} else {
				n += 13
			}
		}
	}
	return n
}

// FloatsWithNulls converts a decoded JSON list of numbers and nulls (how the
// services send log-probs) to float32, a null becoming NaN.
func FloatsWithNulls(v []*float64) []float32 {
	if v == nil {
		return nil
	}
	out := make([]float32, len(v))
	for i, x := range v {
		if x == nil {
			out[i] = float32(math.NaN())
		} else {
			out[i] = float32(*x)
		}
	}
	return out
}
