package backend

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestDatumJSONShape(t *testing.T) {
	d := Datum{ModelInput: Tokens([]int32{1, 2}), LossFnInputs: map[string]TensorData{
		InputTargetTokens: IntTensor([]int32{2, 3}),
		InputAdvantages:   FloatTensor([]float32{0, 1.5}),
	}}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"loss_fn_inputs":{"advantages":{"data":[0,1.5],"dtype":"float32","shape":[2]},"target_tokens":{"data":[2,3],"dtype":"int64","shape":[2]}},"model_input":{"chunks":[{"tokens":[1,2],"type":"encoded_text"}]}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back Datum
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.ModelInput, d.ModelInput) || !reflect.DeepEqual(back.LossFnInputs[InputAdvantages].Floats, []float32{0, 1.5}) {
		t.Errorf("round trip: %v %+v", err, back)
	}
	d.LossFnInputs[InputLogprobs] = FloatTensor([]float32{float32(math.Inf(-1)), 0})
	if _, err := json.Marshal(d); err == nil || !strings.Contains(err.Error(), "finite") {
		t.Errorf("-Inf encoded: %v", err)
	}
}

func TestValidateDatum(t *testing.T) {
	ok := Datum{ModelInput: Tokens([]int32{1, 2}), LossFnInputs: map[string]TensorData{
		InputTargetTokens: IntTensor([]int32{2, 3}), InputLogprobs: FloatTensor([]float32{0, -1}), InputAdvantages: FloatTensor([]float32{0, 1}),
	}}
	if err := ValidateDatum(ok, PPO); err != nil {
		t.Fatal(err)
	}
	mut := func(f func(d *Datum)) Datum {
		d := Datum{ModelInput: ok.ModelInput, LossFnInputs: map[string]TensorData{}}
		for k, v := range ok.LossFnInputs {
			d.LossFnInputs[k] = v
		}
		f(&d)
		return d
	}
	bad := map[string]Datum{
		"mask key":    mut(func(d *Datum) { d.LossFnInputs["mask"] = FloatTensor([]float32{1, 1}) }),
		"short":       mut(func(d *Datum) { d.LossFnInputs[InputAdvantages] = FloatTensor([]float32{1}) }),
		"dtype":       mut(func(d *Datum) { d.LossFnInputs[InputTargetTokens] = FloatTensor([]float32{2, 3}) }),
		"missing":     mut(func(d *Datum) { delete(d.LossFnInputs, InputLogprobs) }),
		"nan":         mut(func(d *Datum) { d.LossFnInputs[InputLogprobs] = FloatTensor([]float32{0, float32(math.NaN())}) }),
		"empty input": mut(func(d *Datum) { d.ModelInput = ModelInput{} }),
	}
	for name, d := range bad {
		if err := ValidateDatum(d, PPO); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if err := ValidateDatum(ok, "dro"); err == nil {
		t.Error("unknown loss accepted")
	}
}

func TestMergeMetrics(t *testing.T) {
	got := MergeMetrics([]map[string]float64{{"loss:sum": 1, "kl:mean": 2, "r:max": 3, "r:min": 3, "id:unique": 7}, {"loss:sum": 2, "kl:mean": 4, "r:max": 5, "r:min": 1, "id:unique": 8}}, []int{1, 3})
	want := map[string]float64{"loss:sum": 3, "kl:mean": 3.5, "r:max": 5, "r:min": 1, "id:unique": 7}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// FuzzDatumJSON: decoding never panics, and what decodes re-encodes to
// something that decodes to the same datum.
func FuzzDatumJSON(f *testing.F) {
	f.Add([]byte(`{"loss_fn_inputs":{"advantages":{"data":[0,1.5],"dtype":"float32"}},"model_input":{"chunks":[{"tokens":[1,2],"type":"encoded_text"}]}}`))
	f.Add([]byte(`{"model_input":{"chunks":[{"type":"image"}]}}`))
	f.Add([]byte(`{"loss_fn_inputs":{"x":{"data":[1e40],"dtype":"int64","shape":[1,2]}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Datum
		if json.Unmarshal(b, &d) != nil {
			return
		}
		out, err := json.Marshal(d)
		if err != nil {
			return // non-finite floats are refused, as they must be
		}
		var again Datum
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatalf("re-decode %s: %v", out, err)
		}
		out2, err := json.Marshal(again)
		if err != nil || string(out2) != string(out) {
			t.Fatalf("not stable:\n%s\n%s (%v)", out, out2, err)
		}
	})
}
