package serve

import (
	"encoding/json"
	"strings"
	"testing"
)

// DecodeInner is promoted into decodeFields as sample.Params is into the sampling fields.
type DecodeInner struct {
	TopK int32 `json:"top_k"`
}

type decodeFields struct {
	DecodeInner
	NPredict *int64          `json:"n_predict"`
	Seed     uint32          `json:"seed"`
	N        int             `json:"n"`
	Tokens   []int32         `json:"ids"`
	Temp     float32         `json:"temperature"`
	Raw      json.RawMessage `json:"prompt"`
}

// TestDecodeIntegerFloats checks that a float in an integer field is truncated toward zero, as llama-server's
// field_num<T>::eval (server-schema.cpp:598) gets it with nlohmann's get<T>() (a C++ float→integer
// conversion), that only a value past the type's range is refused as out of range, and that float fields and
// raw fields keep their text.
func TestDecodeIntegerFloats(t *testing.T) {
	cases := []struct {
		body, want, err string
	}{
		{`{"n_predict": 2.0}`, `{"top_k":0,"n_predict":2,"seed":0,"n":0,"ids":null,"temperature":0,"prompt":null}`, ""},
		{`{"n_predict": 3.5, "top_k": -3.9, "n": 1e1}`, `{"top_k":-3,"n_predict":3,"seed":0,"n":10,"ids":null,"temperature":0,"prompt":null}`, ""},
		{`{"seed": 4294967295.9, "TOP_K": 2.5e0}`, `{"top_k":2,"n_predict":null,"seed":4294967295,"n":0,"ids":null,"temperature":0,"prompt":null}`, ""},
		{`{"seed": -0.5}`, `{"top_k":0,"n_predict":null,"seed":0,"n":0,"ids":null,"temperature":0,"prompt":null}`, ""},
		{`{"ids": [1.0, 2.7, 3], "temperature": 0.5, "prompt": [1.5]}`, `{"top_k":0,"n_predict":null,"seed":0,"n":0,"ids":[1,2,3],"temperature":0.5,"prompt":[1.5]}`, ""},
		{`{"top_k": 2147483647.5}`, `{"top_k":2147483647,"n_predict":null,"seed":0,"n":0,"ids":null,"temperature":0,"prompt":null}`, ""},
		{`{"top_k": 2147483648.0}`, "", "Field 'top_k': number 2147483648.0 is out of range for an integer in [-2147483648, 2147483647]"},
		{`{"top_k": 3000000000}`, "", "Field 'top_k': number 3000000000 is out of range for an integer in [-2147483648, 2147483647]"},
		{`{"n_predict": 1e19}`, "", "Field 'n_predict': number 1e19 is out of range for an integer in [-9223372036854775808, 9223372036854775807]"},
		{`{"n_predict": 1e400}`, "", "Field 'n_predict': number 1e400 is out of range for an integer in [-9223372036854775808, 9223372036854775807]"},
		{`{"seed": -1}`, "", "Field 'seed': number -1 is out of range for an integer in [0, 4294967295]"},
		{`{"seed": -1.5}`, "", "Field 'seed': number -1.5 is out of range for an integer in [0, 4294967295]"},
		{`{"ids": [1, 1e10]}`, "", "Field 'ids': number 1e10 is out of range for an integer in [-2147483648, 2147483647]"},
		{`{"temperature": 1e39}`, "", "Field 'temperature': number 1e39 is out of range for a 32-bit float"},
		{`{"n_predict": "2"}`, "", "Field 'n_predict': expected an integer, got string"},
		{`{"n_predict": 2.0} x`, "", "invalid JSON"},
	}
	for _, c := range cases {
		var f decodeFields
		err := decodeJSON([]byte(c.body), &f)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.body, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.body, err)
			continue
		}
		got, _ := json.Marshal(f)
		if string(got) != c.want {
			t.Errorf("%s: got %s, want %s", c.body, got, c.want)
		}
	}
}
