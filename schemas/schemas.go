// Package schemas embeds the JSON Schemas that define request bodies: the
// ingest envelope, one schema per collection and the delivery. They are
// compiled once at start-up and are also the source of the OpenAPI document.
package schemas
