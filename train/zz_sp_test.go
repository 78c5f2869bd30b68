package train

import (
	"testing"

	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
)

func TestZZSpirals(t *testing.T) {
	pool := parallel.New(2)
	defer pool.Close()
	o := DefaultSpirals()
	o.MaxIters = 3000
	r, err := RunSpirals(t.Context(), o, pool, quant.Detect(), func(it int, ce, acc float64) { t.Logf("iter %d ce %.4f acc %.3f", it, ce, acc) })
	t.Log(r, err)
}
