package mcp

import "github.com/prometheus/client_golang/prometheus"

// metrics are the manager's Prometheus series: calls by server and result
// (ok, error: the server's isError, failed: timeout, server down or lost,
// protocol error), and per server whether it is connected and how often
// it was restarted (read from Status at each scrape).
type metrics struct {
	calls *prometheus.CounterVec
}

var (
	upDesc = prometheus.NewDesc("gateway_mcp_server_up",
		"1 while the MCP server is connected, 0 otherwise.", []string{"server"}, nil)
	restartsDesc = prometheus.NewDesc("gateway_mcp_server_restarts",
		"Reconnections of the MCP server after it went down (since the daemon started or the server's config changed).", []string{"server"}, nil)
)

func newMetrics() metrics {
	return metrics{calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gateway_mcp_tool_calls_total",
		Help: "MCP tool calls by server and result (ok, error: the tool reported isError, failed: timeout, server down or gone)."},
		[]string{"server", "result"})}
}

func (mt metrics) count(server string, res Result, err error) {
	result := "ok"
	switch {
	case err != nil:
		result = "failed"
	case res.IsError:
		result = "error"
	}
	mt.calls.WithLabelValues(server, result).Inc()
}

// statusCollector reports Status as gauges at each scrape.
type statusCollector struct{ m *Manager }

func (c statusCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- upDesc
	ch <- restartsDesc
}

func (c statusCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.m.Status() {
		up := 0.0
		if s.State == StateReady {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, up, s.Name)
		ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.GaugeValue, float64(s.Restarts), s.Name)
	}
}
