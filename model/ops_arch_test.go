package model

import (
	"testing"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
)

// TestGeluTableMatchesReference: the GELU table, all 65,536 entries, equals
// the reference's ggml_table_gelu_f16 bit for bit.
func TestGeluTableMatchesReference(t *testing.T) {
	k, err := reference.LoadKernels()
	if err != nil {
		testdata.Absent(t, "reference not installed (run scripts/install-reference.sh): %v", err)
	}
	want, err := k.GeluTableF16()
	if err != nil {
		t.Fatal(err)
	}
	got := geluTable()
	bad := 0
	for i := range want {
		if got[i] != want[i] {
			if bad++; bad <= 5 {
				t.Errorf("half %#04x: %#04x, reference %#04x", i, got[i], want[i])
			}
		}
	}
	t.Logf("%d of %d GELU table entries equal to ggml_table_gelu_f16", len(want)-bad, len(want))
}
