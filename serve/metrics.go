package serve

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus collectors, in a registry of their own (no global state). The names
// are llama-server's /metrics names (server_task_result_metrics::to_metrics) where bankml measures the same
// quantity; bankml's own are under the bankml: prefix.
type metrics struct {
	reg *prometheus.Registry

	promptTokens  prometheus.Counter // llamacpp:prompt_tokens_total (excluding cached tokens)
	promptCached  prometheus.Counter // llamacpp:prompt_tokens_cached_total
	promptSeconds prometheus.Counter // llamacpp:prompt_seconds_total
	predicted     prometheus.Counter // llamacpp:tokens_predicted_total
	predictedSecs prometheus.Counter // llamacpp:tokens_predicted_seconds_total
	nTokensMax    prometheus.Gauge   // llamacpp:n_tokens_max
	requests      *prometheus.CounterVec
	refused       *prometheus.CounterVec
	mu            sync.Mutex // guards maxSeenTokens
	maxSeenTokens float64
}

// newMetrics registers the collectors. busySlots and queueLen give llamacpp:requests_processing and
// llamacpp:requests_deferred as llama-server computes them for SERVER_TASK_TYPE_METRICS
// (server-context.cpp:2503–2514: the slots whose is_processing() holds; the deferred tasks): a request
// waiting for a slot is deferred, not processing. ledgerSize may be nil (no ledger).
func newMetrics(busySlots, queueLen, ledgerSize func() float64) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	c := func(name, help string) prometheus.Counter {
		x := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		m.reg.MustRegister(x)
		return x
	}
	g := func(name, help string) prometheus.Gauge {
		x := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		m.reg.MustRegister(x)
		return x
	}
	m.promptTokens = c("llamacpp:prompt_tokens_total", "Number of prompt tokens processed, excluding cached tokens")
	m.promptCached = c("llamacpp:prompt_tokens_cached_total", "Number of prompt tokens reused from the cache")
	m.promptSeconds = c("llamacpp:prompt_seconds_total", "Total time spent processing prompts")
	m.predicted = c("llamacpp:tokens_predicted_total", "Number of generation tokens processed")
	m.predictedSecs = c("llamacpp:tokens_predicted_seconds_total", "Total time spent generating tokens")
	m.nTokensMax = g("llamacpp:n_tokens_max", "Largest observed sequence length (prompt + generation)")
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "llamacpp:requests_processing", Help: "Number of requests processing",
	}, busySlots))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "llamacpp:requests_deferred", Help: "Number of requests deferred",
	}, queueLen))
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bankml:http_requests_total", Help: "HTTP requests answered, by route pattern and status code",
	}, []string{"route", "code"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bankml:requests_refused_total", Help: "Requests refused before generation, by reason (queue_full, model_changed, context, invalid, origin, host)",
	}, []string{"reason"})
	m.reg.MustRegister(m.requests, m.refused)
	if ledgerSize != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "bankml:ledger_size", Help: "Entries in the history ledger",
		}, ledgerSize))
	}
	return m
}

// answered counts a finished answer's tokens and times (Server.finish calls it).
func (m *metrics) answered(u usage) {
	m.promptTokens.Add(float64(max(u.PromptTokens-u.CachedTokens, 0)))
	m.promptCached.Add(float64(u.CachedTokens))
	m.promptSeconds.Add(u.PromptMS / 1e3)
	m.predicted.Add(float64(u.CompletionTokens))
	m.predictedSecs.Add(u.PredictedMS / 1e3)
	m.mu.Lock()
	if n := float64(u.PromptTokens + u.CompletionTokens); n > m.maxSeenTokens {
		m.maxSeenTokens = n
		m.nTokensMax.Set(n)
	}
	m.mu.Unlock()
}

// refusedFor counts a refusal before generation: reason is one of queue_full, model_changed, context, invalid, origin (a page
// of a refused origin), host (a Host header refused on a loopback connection).
func (m *metrics) refusedFor(reason string) { m.refused.WithLabelValues(reason).Inc() }

// request counts an answered HTTP request.
func (m *metrics) request(route string, code int) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
}

// handler serves the registry in Prometheus' text format (llama-server's GET /metrics).
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
