"""A session's spans: what the loop reports to (:mod:`.spans`, no-op by default), which
tracer a turn gets (:mod:`.tracing`) and the OpenTelemetry spans (:mod:`.otel_spans`,
imported only once an application uses OpenTelemetry)."""
