package serve

import (
	"encoding/json"
	"testing"

	"github.com/bankml/bankml/quant"
)

// TestReceiptAndPropsNameTheMatch checks that a server named the variant it
// matches (Options.Match; BANKML_MATCH's by default) in /props'
// bankml.match and in every receipt's match.
func TestReceiptAndPropsNameTheMatch(t *testing.T) {
	want, err := quant.MatchFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ opt, want string }{{"", want.Variant.String()}, {"alderlake", "alderlake"}} {
		ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Match: c.opt})
		st, b := ts.get(t, "/props")
		var props struct {
			Bankml struct {
				Match string `json:"match"`
			} `json:"bankml"`
		}
		if st != 200 || json.Unmarshal(b, &props) != nil || props.Bankml.Match != c.want {
			t.Errorf("Options.Match %q: /props: %d, bankml.match %q, want %q", c.opt, st, props.Bankml.Match, c.want)
		}
		st, b = ts.post(t, "/v1/completions", []byte(`{"prompt":"Once","max_tokens":2,"temperature":0}`))
		var ans struct {
			Receipt Receipt `json:"bankml_receipt"`
		}
		if st != 200 || json.Unmarshal(b, &ans) != nil || ans.Receipt.Match != c.want {
			t.Errorf("Options.Match %q: receipt: %d, match %q, want %q\n%s", c.opt, st, ans.Receipt.Match, c.want, b)
		}
	}
}
