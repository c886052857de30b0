package httpapi

import (
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/examples"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/openapi"
)

var (
	deliveryWrites = []int{409, 413}
	// fileUploads: an upload too slow or stalled is cut (408).
	fileUploads = []int{408, 409, 413}
	jsonBody    = func(schema string) openapi.Response { return openapi.Response{Schema: schema} }
	replayable  = func(schema string) openapi.Response { return openapi.Response{Schema: schema, Replayable: true} }
	// replayedState: a replay may say its change was compacted.
	replayedState = func(r openapi.Response) openapi.Response {
		r.Headers = append(r.Headers, "Idempotent-Replayed-State")
		return r
	}
)

// routes is the route table of the service.
func (a *API) routes() []route {
	return []route{
		{Method: "GET", Path: "/health/live", Access: accessHealth, Handler: a.healthLive, Doc: openapi.Op{
			ID: "getLiveness", Tag: "Health", Summary: "The process is running",
			Description: "Always 200 while the process runs. Not rate limited, not audited.", OK: jsonBody("HealthStatus")}},
		{Method: "GET", Path: "/health/ready", Access: accessHealth, Handler: a.healthReady, Doc: openapi.Op{
			ID: "getReadiness", Tag: "Health", Summary: "The process can serve traffic",
			Description: "200 when the database and the file store answer within the probe timeout, else 503. Successful probes are not audited.",
			OK:          jsonBody("HealthStatus"), Errors: []int{503}}},
		{Method: "GET", Path: "/health/version", Access: accessHealth, Handler: a.healthVersion, Doc: openapi.Op{
			ID: "getVersion", Tag: "Health", Summary: "What is running",
			Description: "Service version, commit, Go version and the database's schema version (read at most every 5 seconds).", OK: jsonBody("VersionReport")}},

		{Method: "GET", Path: "/v1/openapi.json", Access: accessDocs, Handler: a.openAPIDocument, Doc: openapi.Op{
			ID: "getOpenAPIDocument", Tag: "Documentation", Summary: "This OpenAPI document",
			Description: "Generated at start-up from the route table and the JSON Schemas; authoritative over prose (spec 9.5). " +
				"Also served at /openapi.json.",
			OK: openapi.Response{Media: "application/json"}}},
		{Method: "GET", Path: "/v1/docs", Access: accessDocs, Handler: a.docsPage(docsV1), Doc: openapi.Op{
			ID: "getDocsPage", Tag: "Documentation", Summary: "Human-readable API documentation",
			Description: "Swagger UI rendering /v1/openapi.json, served from assets embedded in the binary. Also served at /docs.",
			OK:          openapi.Response{Media: "text/html"}}},
		{Method: "GET", Path: "/v1/docs/:docFile", Access: accessDocs, Handler: a.docsPage(docsV1), Doc: openapi.Op{
			ID: "getDocsAsset", Tag: "Documentation", Summary: "A file of the documentation page",
			Description: "Scripts, styles and icons of the documentation page.",
			OK:          openapi.Response{Media: "*/*"}, Errors: []int{404}}},
		{Method: "GET", Path: "/openapi.json", Access: accessDocs, Handler: a.openAPIDocument, Doc: openapi.Op{
			ID: "getOpenAPIDocumentAlias", Tag: "Documentation", Summary: "This OpenAPI document (alias of /v1/openapi.json)",
			Description: "The same document as /v1/openapi.json, kept at its first address.",
			OK:          openapi.Response{Media: "application/json"}}},
		{Method: "GET", Path: "/docs", Access: accessDocs, Handler: a.docsPage(docsRoot), Doc: openapi.Op{
			ID: "getDocsPageAlias", Tag: "Documentation", Summary: "Human-readable API documentation (alias of /v1/docs)",
			Description: "The same page as /v1/docs, kept at its first address.",
			OK:          openapi.Response{Media: "text/html"}}},
		{Method: "GET", Path: "/docs/:docFile", Access: accessDocs, Handler: a.docsPage(docsRoot), Doc: openapi.Op{
			ID: "getDocsAssetAlias", Tag: "Documentation", Summary: "A file of the documentation page (alias)",
			Description: "Scripts, styles and icons of the documentation page at /docs.",
			OK:          openapi.Response{Media: "*/*"}, Errors: []int{404}}},

		{Method: "GET", Path: "/problems/:code", Access: accessDocs, Handler: a.problemType, Doc: openapi.Op{
			ID: "getProblemType", Tag: "Documentation", Summary: "What a problem type means",
			Description: "Every problem document's `type` is this URL (RFC 9457 recommends a dereferenceable type). " +
				"A short page for browsers, or JSON for `Accept: application/json`: the type's status, title, " +
				"what causes it and whether to retry (spec 7). Unauthenticated and not rate limited; an unknown code is a 404.",
			OK: openapi.Response{Schema: "ProblemType", Media: "text/html"}, Errors: []int{404}}},

		{Method: "GET", Path: "/v1/restaurants", Access: accessPartner, Op: op(a.restaurantsList), Handler: a.restaurantsListREST(), Doc: openapi.Op{
			ID: "listRestaurants", Tag: "Restaurants", Summary: "Restaurants the key reaches",
			Description: "Every restaurant the key holds a grant for, with its scopes; both sorted (spec 4.2). The answer " +
				"carries an ETag that changes exactly when the list does (a grant given, changed or taken back): keep it " +
				"with the list and send it as If-None-Match, and while nothing changed the answer is 304 Not Modified " +
				"without a body, whatever the number of restaurants. A compressed answer's tag ends in its coding " +
				"(-gzip, -zstd); either form is accepted.",
			Headers: []string{"IfNoneMatch"}, Extra: []int{304},
			OK: withLinks(openapi.Response{Schema: "RestaurantList", Headers: []string{"ETag"}},
				openapi.Link{Name: "collections", OperationID: "listCollections", Description: "The collections the key reads at a restaurant of the list.",
					Parameters: map[string]string{"restaurantId": openapi.FromBody("/data/0/restaurantId")}},
				openapi.Link{Name: "deliveryChanges", OperationID: "listDeliveryChanges", Description: "The deliveries of a restaurant of the list, as received (needs deliveries:read there).",
					Parameters: map[string]string{"restaurantId": openapi.FromBody("/data/0/restaurantId")}})}},

		{Method: "GET", Path: "/v1/changes", Access: accessPartner, Op: op(a.changesList), Doc: openapi.Op{
			ID: "listChanges", Tag: "Restaurants", Summary: "Which streams the key reads changed",
			Description: "Key-wide: the streams the key may read (each readable collection of each granted restaurant, and " +
				"the deliveries where it holds deliveries:read) that changed since the cursor's position, each with its head " +
				"(its position now: a collection's highest sequence, the deliveries' last receive position), by restaurantId " +
				"then stream. Without a cursor, every readable stream that holds anything. Pages carry nextCursor until the " +
				"last, which carries changesCursor: keep it and list again from it later; when nothing changed the answer is " +
				"one empty page. A stream may be listed again with the head you already hold (a write still in flight when " +
				"the position was taken makes the position lag, never skip): compare heads and walk only the streams whose " +
				"head moved, from your changesCursor for that collection or deliveries (GET .../delivery-changes). Streams " +
				"the key cannot read are never listed; when the key's grants change, the next listing starts over. Cursors " +
				"accept any limit and never expire.",
			Query: []string{"limit", "cursor"}, OK: withLinks(jsonBody("StreamChangesPage"),
				nextPage("listChanges"), later("listChanges"),
				openapi.Link{Name: "walk", OperationID: "walkRecords", Description: "Walk a changed collection stream (a `deliveries` stream is read with listDeliveryChanges).",
					Parameters: map[string]string{"restaurantId": openapi.FromBody("/data/0/restaurantId"), "collection": openapi.FromBody("/data/0/stream")}})}},

		{Method: "GET", Path: "/v1/records", Access: accessPartner, Op: op(a.recordsFeed), Doc: openapi.Op{
			ID: "walkAllRecords", Tag: "Restaurants", Summary: "Every record the key reads, many streams per page",
			Description: "Key-wide, for a first sync or a rebuild: the items of every stream GET /v1/changes lists without a " +
				"cursor (each readable collection of each granted restaurant, and the deliveries where the key holds " +
				"deliveries:read), stream after stream by restaurantId then stream. Inside a collection, exactly the records " +
				"of a full walk of it, in its order (tombstones included), pinned when the feed reaches the stream; inside " +
				"the deliveries, every delivery in receive order, as GET .../delivery-changes returns them. Each item says its " +
				"restaurantId and stream. A page holds up to limit items and stops once they pass about 1 MiB (always at " +
				"least one). `streams` lists each stream once, on the page of its last item, with its head and the " +
				"changesCursor its own walk would have given: keep them as you keep a walk's, and walk a stream from its " +
				"cursor later. Pages carry nextCursor (any limit) until the last, which carries changesCursor instead: a " +
				"GET /v1/changes cursor from the feed's start, whose listing reports every stream written while the feed " +
				"ran. nextCursor expires like a walk's (24 hours by default after the feed started its current stream: " +
				"start the feed again); when the key's grants change, the feed starts over from the beginning. " +
				"With since (the changesCursor of the last page of this feed or of GET /v1/changes), a feed of what " +
				"changed: only the streams GET /v1/changes lists from that position, each from its first change since " +
				"(records, tombstones included, as a walk from the stream's changesCursor; deliveries received since), " +
				"so a catch-up costs pages of changes, not a walk per stream. Its pages, streams and last changesCursor " +
				"are the feed's; its nextCursor carries since. A since issued before the key's grants changed is " +
				"refused (400): a stream the key gained holds older records; read the feed without since.",
			Query: []string{"feedLimit", "cursor", "since"}, OK: withLinks(jsonBody("RecordFeedPage"),
				nextPage("walkAllRecords"),
				openapi.Link{Name: "catchUp", OperationID: "walkAllRecords", Description: "Later, from the last page: what changed since, many streams per page.",
					Parameters: map[string]string{"since": openapi.FromBody("/changesCursor")}},
				openapi.Link{Name: "changes", OperationID: "listChanges", Description: "On the last page: the streams written since the feed began.",
					Parameters: map[string]string{"cursor": openapi.FromBody("/changesCursor")}},
				openapi.Link{Name: "walkStream", OperationID: "walkRecords", Description: "Later: the changes of a collection stream the feed finished, from where the feed left it.",
					Parameters: map[string]string{"restaurantId": openapi.FromBody("/streams/0/restaurantId"),
						"collection": openapi.FromBody("/streams/0/stream"), "cursor": openapi.FromBody("/streams/0/changesCursor")}})}},

		{Method: "GET", Path: "/v1/restaurants/:restaurantId/deliveries", Access: accessPartner,
			Need: scopes(catalog.DeliveriesRead), Op: op(a.deliveriesList), Doc: openapi.Op{
				ID: "listDeliveries", Tag: "Deliveries", Summary: "Deliveries in a time window, newest first",
				Description: "occurredAt within [from, to] (both inclusive, at most " + maxSpanText + " apart), ordered by occurredAt " +
					"descending then id descending. Keyset pages: follow nextCursor with the same from, to and limit; it is null " +
					"on the last page. Poll incrementally with the newest occurredAt seen minus an hour as the next from, and " +
					"deduplicate on id: devices upload late.",
				Query: []string{"from", "to", "limit", "cursor"}, OK: withLinks(jsonBody("DeliveryPage"),
					openapi.Link{Name: "nextPage", OperationID: "listDeliveries", Description: "The next page: the same window and limit, with nextCursor.",
						Parameters: openapi.With(openapi.SamePath("restaurantId"), "from", openapi.FromQuery("from"), "to", openapi.FromQuery("to"),
							"limit", openapi.FromQuery("limit"), "cursor", openapi.FromBody("/nextCursor"))},
					deliveryOf("/data/0/id"))}},
		{Method: "GET", Path: "/v1/restaurants/:restaurantId/delivery-changes", Access: accessPartner,
			Need: scopes(catalog.DeliveriesRead), Op: op(a.deliveryChanges), Doc: openapi.Op{
				ID: "listDeliveryChanges", Tag: "Deliveries", Summary: "Deliveries in the order they were received",
				Description: "Every delivery of the restaurant in receive order (the order the service stored them), whatever " +
					"its occurredAt: a delivery checked days ago and uploaded late comes after everything received before it. " +
					"Without a cursor the list starts at the first delivery received. Pages carry nextCursor until the last, " +
					"which carries changesCursor instead: keep it, and pass it as cursor later to get only the deliveries " +
					"received since (an empty page when none). Cursors are bound to the restaurant, accept any limit and never " +
					"expire. The occurredAt window of GET .../deliveries is unchanged; this list is the one to poll.",
				Query: []string{"limit", "cursor"}, OK: withLinks(jsonBody("DeliveryChangesPage"),
					nextPage("listDeliveryChanges", "restaurantId"), later("listDeliveryChanges", "restaurantId"), deliveryOf("/data/0/id"))}},
		{Method: "GET", Path: "/v1/restaurants/:restaurantId/deliveries/:deliveryId", Access: accessPartner,
			Need: scopes(catalog.DeliveriesRead), Op: op(a.deliveryGet), Doc: openapi.Op{
				ID: "getDelivery", Tag: "Deliveries", Summary: "One delivery",
				Description: "An unknown delivery and an ungranted restaurant are the same 404.",
				OK: withLinks(jsonBody("DeliveryRecord"), openapi.Link{Name: "images", OperationID: "listDeliveryImages",
					Description: "The delivery's photographs (needs delivery-images:read too).", Parameters: openapi.SamePath("restaurantId", "deliveryId")})}},
		{Method: "PUT", Path: "/v1/ingest/restaurants/:restaurantId/deliveries/:deliveryId", Access: accessPartner,
			Need: scopes(catalog.DeliveriesWrite), Handler: a.ingest(metrics.WriteDelivery, a.deliveryPut), Doc: openapi.Op{
				ID: "putDelivery", Tag: "Ingest", Summary: "Record a delivery (provider write path)",
				Description: "Deliveries are immutable: the same content again answers 200 with Idempotent-Replayed: true; " +
					"different content for an existing id is 409. restaurantId may be omitted; id and restaurantId must equal the path.",
				Body: &openapi.Body{Schema: "Delivery", Example: "DeliveryBody"}, Errors: deliveryWrites,
				OK: withLinks(replayable("DeliveryResult"), deliveryOf("/data/id"))}},
		{Method: "GET", Path: "/v1/restaurants/:restaurantId/deliveries/:deliveryId/images", Access: accessPartner,
			Need: scopes(catalog.DeliveriesRead, catalog.DeliveryImagesRead), Op: op(a.deliveryImagesList), Doc: openapi.Op{
				ID: "listDeliveryImages", Tag: "Deliveries", Summary: "Photographs of a delivery, with signed URLs",
				Description: "By image id. Each url works for " + urlLifetimeText + " without any header; store the bytes, not the link, " +
					"and call again for fresh URLs.", OK: jsonBody("FileList")}},
		{Method: "PUT", Path: "/v1/ingest/restaurants/:restaurantId/deliveries/:deliveryId/images/:imageId", Access: accessPartner,
			Need: scopes(catalog.DeliveryImagesWrite), Handler: a.ingest(metrics.WriteDeliveryImage, a.deliveryImagePut), Doc: openapi.Op{
				ID: "putDeliveryImage", Tag: "Ingest", Summary: "Upload a delivery photograph",
				Description: "The body is the file; Repr-Digest carries its SHA-256 and nothing is stored unless it matches. " +
					"A photograph only: Content-Type image/jpeg, image/png, image/webp, image/heic or image/heif, and bytes that begin as " +
					"that type does; another type, an empty body or bytes of another type are 400. " +
					"The same bytes again replay; other bytes for an existing image id are 409. " +
					"The delivery's imageCount is not checked against its images: it is the provider's own figure. " +
					"Example: the bytes of the example delivery's photograph, the file GET .../images lists for it (a PNG; the document " +
					"cannot carry bytes that are not text), whose digest the Repr-Digest example is.",
				Headers: []string{"ReprDigest", "UploadDraftInteropVersion", "UploadComplete"}, ParamExamples: openapi.PhotoParamExamples(), Errors: fileUploads, Alt: resumableCreated,
				Body: &openapi.Body{Binary: true, Media: photoMediaTypes()},
				OK: withLinks(replayable("FileResult"), openapi.Link{Name: "images", OperationID: "listDeliveryImages",
					Description: "The delivery's photographs, with signed URLs.", Parameters: openapi.SamePath("restaurantId", "deliveryId")})}},

		{Method: "GET", Path: "/v1/restaurants/:restaurantId/collections", Access: accessPartner,
			Need: scopes(), Op: op(a.collectionsList), Doc: openapi.Op{
				ID: "listCollections", Tag: "Collections", Summary: "Collections the key may read",
				Description: "Only collections whose read scope the key holds on the restaurant, by name; an empty list is valid.",
				OK: withLinks(jsonBody("CollectionList"), openapi.Link{Name: "walk", OperationID: "walkRecords", Description: "Walk a collection of the list.",
					Parameters: map[string]string{"restaurantId": openapi.FromPath("restaurantId"), "collection": openapi.FromBody("/data/0/collection")}})}},
		{Method: "GET", Path: "/v1/restaurants/:restaurantId/collections/:collection/records", Access: accessPartner,
			Need: collectionScope("read"), Op: op(a.recordsWalk), Doc: openapi.Op{
				ID: "walkRecords", Tag: "Collections", Summary: "Walk a collection (a snapshot)",
				Description: "By sequence ascending. The first page pins the stream position; later pages answer as of it: " +
					"records changed or deleted during the walk appear once as they stood, records created after it do not. " +
					"nextCursor is bound to the restaurant, collection and limit; a walk's cursors last 24 hours from its first page. " +
					"The last page (nextCursor null) carries changesCursor: passed as cursor, it starts a changes walk that " +
					"returns only the records created, updated or deleted since that snapshot, each once in its latest state " +
					"(an empty page when nothing changed), and ends with the next changesCursor. A changesCursor never expires; " +
					"used for another restaurant or collection, altered, or beyond the stream's position it is a 400: do a full walk. " +
					"Reconcile by id, overwrite when sequence is higher, apply tombstones (deleted: true) as deletions. " +
					"Failure order: no grant for the restaurant 404, unknown collection 400, missing scope 403.",
				Query: []string{"limit", "cursor"}, OK: withLinks(openapi.Response{Schema: "EnvelopePage", Example: "EnvelopePage"},
					nextPage("walkRecords", "restaurantId", "collection"), later("walkRecords", "restaurantId", "collection"),
					recordOf(openapi.FromPath("collection"), openapi.FromBody("/data/0/id")))}},
		{Method: "GET", Path: "/v1/restaurants/:restaurantId/collections/:collection/records/:recordId", Access: accessPartner,
			Need: collectionScope("read"), Op: op(a.recordGet), Doc: openapi.Op{
				ID: "getRecord", Tag: "Collections", Summary: "One record's current state",
				Description: "Tombstones included: a deleted record answers its tombstone.",
				OK: withLinks(jsonBody("Envelope"), openapi.Link{Name: "assets", OperationID: "listRecordAssets",
					Description: "The record's verified files (cleaning-task-pictures, traceability-labels and drive-files carry files).",
					Parameters:  openapi.SamePath("restaurantId", "collection", "recordId")})}},
		{Method: "GET", Path: "/v1/restaurants/:restaurantId/collections/:collection/records/:recordId/assets", Access: accessPartner,
			Need: collectionScope("read"), Op: op(a.assetsList), Doc: openapi.Op{
				ID: "listRecordAssets", Tag: "Files", Summary: "Verified files of a record, with signed URLs",
				Description: "Only uploads completed and verified; a pending asset is absent and a deleted record's list is empty. " +
					"Only cleaning-task-pictures, traceability-labels and drive-files carry files.", OK: jsonBody("FileList")}},
		{Method: "PUT", Path: "/v1/ingest/restaurants/:restaurantId/collections/:collection/records/:recordId/mutations/:mutationId",
			Access: accessPartner, Need: collectionScope("write"), Handler: a.ingest(metrics.WriteMutation, a.recordPut), Doc: openapi.Op{
				ID: "ingestSnapshot", Tag: "Ingest", Summary: "Ingest a full snapshot of a record",
				Description: "Idempotency-Key, the path and the body must agree on the mutationId. The same request again answers " +
					"200 with the first answer and Idempotent-Replayed: true; the same mutationId for anything else is 409. " +
					"deleted: true submits a tombstone (data may be omitted). data.asset's status is set by the service.",
				Headers: []string{"IdempotencyKey"}, Body: &openapi.Body{Schema: "IngestSnapshot", Example: openapi.CollectionSchema("Snapshot", examples.FileCollection)},
				OK:            withLinks(replayedState(replayable("EnvelopeResult")), recordOf(openapi.FromBody("/data/collection"), openapi.FromPath("recordId"))),
				Errors:        []int{409, 413},
				PerCollection: &openapi.PerCollection{ID: "ingest%sSnapshot", Body: "Snapshot", ParamExamples: openapi.SnapshotParamExamples}}},
		{Method: "POST", Path: "/v1/ingest/restaurants/:restaurantId/batch", Access: accessPartner,
			Need: scopes(), Handler: a.ingestBatch, Doc: openapi.Op{
				ID: "ingestBatch", Tag: "Ingest", Summary: "Ingest many snapshots and deliveries in one request",
				Description: "A device's queue in one request: 1 to " + strconv.Itoa(MaxBatchItems) + " items, each a snapshot of a collection's " +
					"record (the body of its single PUT, whose id and mutationId stand for the path's and the Idempotency-Key) or a " +
					"delivery (collection `deliveries`). Items are applied in order, each by every rule of its single PUT (validation, " +
					"scope, clock skew, idempotency by mutationId), and answered in order with what that PUT would have answered: status " +
					"200 with data and replayed, or a 4xx with its problem document. Not atomic: an item refused never stops the next, " +
					"and each item applied stays applied. When the connection drops mid-batch, the items before the cut are applied and " +
					"the rest are not: resending the whole batch is always safe (applied items answer replayed: true). " +
					"A batch costs one request of the key's budget per started " + strconv.Itoa(BatchItemsPerRequest) + " items (" +
					strconv.Itoa(MaxBatchItems) + " items: " + strconv.Itoa(MaxBatchItems/BatchItemsPerRequest) + "), never more than the " +
					"whole budget, admitted whole or refused with 429 before anything is applied. The body is at most " +
					"FOODSAFE_MAX_BATCH_BYTES (4 MiB by default), each item at most FOODSAFE_MAX_BODY_BYTES. A malformed batch (not " +
					"JSON, no items, more than " + strconv.Itoa(MaxBatchItems) + ", an unknown collection) is a 400 and nothing is applied.",
				Body: &openapi.Body{Schema: "IngestBatch", Example: "IngestBatch"}, Errors: []int{413},
				OK: withLinks(jsonBody("IngestBatchResults"), recordOf(openapi.FromBody("/data/0/data/collection"), openapi.FromBody("/data/0/data/id")))}},
		{Method: "PUT", Path: "/v1/ingest/restaurants/:restaurantId/collections/:collection/records/:recordId/asset", Access: accessPartner,
			Need: collectionScope("write"), Handler: a.ingest(metrics.WriteAsset, a.assetPut), Doc: openapi.Op{
				ID: "uploadRecordAsset", Tag: "Ingest", Summary: "Upload the file a record's data.asset names",
				Description: "The device finishes sending: the body is the file, Repr-Digest its SHA-256. On success the record " +
					"gets a new change whose data.asset is uploaded with contentType, byteLength and sha256. Only for " +
					"cleaning-task-pictures, traceability-labels and drive-files (others 400); 409 when the record names no " +
					"asset or the asset was uploaded with other bytes. A key without the collection's read scope gets the change's " +
					"identity without data (as for a compacted replay): the record's data is for readers.",
				PathParams: map[string]string{"collection": "fileCollection"},
				Query:      []string{"objectKey"}, Headers: []string{"ReprDigest", "UploadDraftInteropVersion", "UploadComplete"}, Body: &openapi.Body{Binary: true, Example: "AssetFile"},
				OK: withLinks(replayedState(replayable("EnvelopeResult")), recordOf(openapi.FromPath("collection"), openapi.FromPath("recordId")),
					openapi.Link{Name: "assets", OperationID: "listRecordAssets", Description: "The record's verified file, with a signed URL.",
						Parameters: openapi.SamePath("restaurantId", "collection", "recordId")}),
				Errors: fileUploads, Alt: resumableCreated}},

		{Method: "HEAD", Path: uploadResource, Access: accessPartner, Need: scopes(), Handler: a.uploadHead, Doc: openapi.Op{
			ID: "headUpload", Tag: "Ingest", Summary: "The bytes a resumable upload holds",
			Description: resumableDoc + " HEAD answers Upload-Offset, the bytes of the file durably kept: resume with PATCH from there. " +
				"A request of this key still sending to the upload (one whose connection was cut without the server knowing) is " +
				"stopped first, its bytes kept and its upload slot freed.",
			Headers: []string{"UploadDraftInteropVersion"},
			OK:      openapi.Response{Status: 204, Headers: []string{"Upload-Offset", "Upload-Complete", "Upload-Length", "Upload-Limit", "Cache-Control"}}}},
		{Method: "PATCH", Path: uploadResource, Access: accessPartner, Need: scopes(), Handler: a.uploadPatch, Doc: openapi.Op{
			ID: "resumeUpload", Tag: "Ingest", Summary: "Append to a resumable upload",
			Description: resumableDoc + " The body is the bytes of the file from Upload-Offset on (Content-Type: application/partial-upload), " +
				"which must equal the bytes the upload holds (else 409 mismatching-upload-offset, whose Upload-Offset header is the " +
				"right one). With Upload-Complete: ?0 the answer is 204 with the new Upload-Offset; with ?1 the file ends here: the " +
				"whole file is verified against the Repr-Digest declared at creation and the answer is exactly the creating endpoint's " +
				"(a wrong digest is its 400, and the upload is gone with its bytes). Every rule of an upload holds for each PATCH: " +
				"the key's upload slots, the upload quota for the whole file, FOODSAFE_UPLOAD_IDLE_TIMEOUT and FOODSAFE_UPLOAD_MIN_RATE.",
			Headers: []string{"UploadOffset", "UploadCompleteRequired", "UploadDraftInteropVersion"},
			Body:    &openapi.Body{Binary: true, Media: []string{partialUpload}, Example: "AssetFile"},
			OK:      openapi.Response{Status: 204, Headers: []string{"Upload-Offset", "Upload-Complete", "Upload-Limit"}},
			Alt: []openapi.Alt{{Status: 200, Description: "The upload completed (Upload-Complete: ?1): the answer of the endpoint that " +
				"created it (uploadRecordAsset's envelope, or putDeliveryImage's file).", Schema: "UploadCompleted"}},
			Errors: []int{408, 409, 413}}},
		{Method: "DELETE", Path: uploadResource, Access: accessPartner, Need: scopes(), Handler: a.uploadDelete, Doc: openapi.Op{
			ID: "cancelUpload", Tag: "Ingest", Summary: "Cancel a resumable upload",
			Description: resumableDoc + " DELETE cancels it: its bytes are deleted and the resource answers 404 from then on.",
			Headers:     []string{"UploadDraftInteropVersion"},
			OK:          openapi.Response{Status: 204}}},

		{Method: "GET", Path: "/v1/files/:restaurantId/:sha256", Access: accessOpen, Handler: a.fileGet, Raw: true,
			Doc: fileDoc("downloadFile", "Download a file with a signed URL")},
		{Method: "HEAD", Path: "/v1/files/:restaurantId/:sha256", Access: accessOpen, Handler: a.fileGet, Raw: true,
			Doc: fileDoc("headFile", "A file's headers, with a signed URL")},

		{Method: "POST", Path: "/v1/mobile/sessions", Access: accessPartner, Handler: a.sessionCreate, Doc: openapi.Op{
			ID: "createMobileSession", Tag: "Sessions", Summary: "Exchange a device key for a session token",
			Description: "Only device keys (holding write scopes). The optional body narrows the token to one restaurant and/or " +
				"some scopes; a restaurant the key has no grant for is the one 404, asking for a scope the key does not hold is 403. The token lives FOODSAFE_SESSION_TTL (default one hour, " +
				"never beyond the key) and dies when the key is revoked or loses a grant the token carries.",
			Body: &openapi.Body{Schema: "SessionRequest", Optional: true, Example: "SessionNarrow"},
			OK: withLinks(openapi.Response{Schema: "Session", Example: "SessionIssued"},
				openapi.Link{Name: "ingest", OperationID: "ingestSnapshot", Description: "Ingest a snapshot at a restaurant the token carries, with the token as bearer credential.",
					Parameters: map[string]string{"restaurantId": openapi.FromBody("/restaurants/0/restaurantId")}}),
			Errors: []int{403, 404, 413}}},

		{Method: "POST", Path: mcpPath, Access: accessPartner, Handler: a.mcpServe, Doc: openapi.Op{
			ID: "mcp", Tag: "MCP", Summary: "Model Context Protocol endpoint for AI clients",
			Description: "The data of this API for AI assistants, over the Model Context Protocol " +
				"(https://modelcontextprotocol.io/specification), Streamable HTTP transport, stateless, JSON responses. " +
				"Protocol revisions 2026-07-28 (no handshake) and 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 " +
				"(initialize, no Mcp-Session-Id). The body is a JSON-RPC 2.0 message; send `Accept: application/json, " +
				"text/event-stream`. Keys, rate limit and audit trail are the REST API's: every POST counts against the " +
				"key's budget. tools/list shows the tools the key can use somewhere: list_restaurants, list_changes, list_collections, " +
				"walk_records, walk_all_records, get_record, list_assets, list_deliveries, list_delivery_changes, get_delivery, list_delivery_images; each calls the " +
				"REST operation of the same data, with its access rules, cursors and messages (" + mcpPagesText + "). " +
				"Records in tool results name their collection from an enum of the 24; describe_collection gives the JSON Schema " +
				"a collection's data follows, this document's `<Collection>Data` component made self-contained. " +
				"A failing tool answers a result with isError: true; protocol errors are JSON-RPC errors (an unknown method: " +
				"-32601 with the call's id, 200 before protocol 2026-07-28); transport errors " +
				"are problems. Other methods than POST are 405.",
			Headers: []string{"McpProtocolVersion", "McpMethod", "McpName"},
			Body:    &openapi.Body{Schema: "JsonRpcRequest", Example: "McpCall", MoreExamples: []string{"McpNotification"}}, OK: jsonBody("JsonRpcResponse"), Errors: []int{413},
			Alt: []openapi.Alt{
				{Status: 202, Description: "A notification (or a response to the server) was accepted; no body."},
				{Status: 400, Description: "a JSON-RPC error (protocol 2026-07-28: unknown tool, invalid parameters, header mismatch).", Schema: "JsonRpcResponse"},
				{Status: 404, Description: "a JSON-RPC error for an unknown method (protocol 2026-07-28).", Schema: "JsonRpcResponse"},
			}}},
	}
}

// withLinks is r with links to follow.
func withLinks(r openapi.Response, links ...openapi.Link) openapi.Response {
	r.Links = append(r.Links, links...)
	return r
}

// nextPage links a page to the next: the same path parameters and limit,
// with nextCursor (null on the last page, where there is none).
func nextPage(op string, path ...string) openapi.Link {
	return openapi.Link{Name: "nextPage", OperationID: op, Description: "The next page, until nextCursor is null: the same limit, with nextCursor.",
		Parameters: openapi.With(openapi.SamePath(path...), "limit", openapi.FromQuery("limit"), "cursor", openapi.FromBody("/nextCursor"))}
}

// later links a last page to the next poll, from its changesCursor.
func later(op string, path ...string) openapi.Link {
	return openapi.Link{Name: "changesLater", OperationID: op, Description: "Later, from the last page: only what changed since, with changesCursor.",
		Parameters: openapi.With(openapi.SamePath(path...), "cursor", openapi.FromBody("/changesCursor"))}
}

// deliveryOf links to a delivery named by a member of the answer.
func deliveryOf(idPointer string) openapi.Link {
	return openapi.Link{Name: "delivery", OperationID: "getDelivery", Description: "A delivery of the answer.",
		Parameters: map[string]string{"restaurantId": openapi.FromPath("restaurantId"), "deliveryId": openapi.FromBody(idPointer)}}
}

// recordOf links to a record's current state.
func recordOf(collection, recordID string) openapi.Link {
	return openapi.Link{Name: "record", OperationID: "getRecord", Description: "The record's current state.",
		Parameters: map[string]string{"restaurantId": openapi.FromPath("restaurantId"), "collection": collection, "recordId": recordID}}
}

func fileDoc(id, summary string) openapi.Op {
	return openapi.Op{ID: id, Tag: "Files", Summary: summary,
		Description: "The URL's signature is its authorisation; changing any character or using it after `expires` is a 403 " +
			"`download-url-expired` problem: list the files again for a fresh URL. " +
			"Supports Range (206) and conditional requests (304, 412); several ranges are coalesced, and a Range whose answer " +
			"would be larger than the file is answered with the whole file (200). Limited per client IP. " +
			"Deployments that keep files in object storage hand out the store's presigned URLs instead; there this route answers 404.",
		Query: []string{"type", "expires", "signature"},
		OK:    openapi.Response{Media: "*/*", Headers: []string{"ETag"}}, Extra: []int{206, 304},
		Errors: []int{403, 404, 412, 416}}
}

// op completes a route's documentation from its access rules.
func (r route) op() openapi.Op {
	o := r.Doc
	o.Method, o.Path = r.Method, r.Path
	switch r.Access {
	case accessOpen:
		o.Limit = openapi.LimitIP
	case accessPartner:
		o.Auth, o.Limit = openapi.AuthBearer, openapi.LimitKey
	}
	if r.Need != nil {
		o.UnderRestaurant = strings.Contains(r.Path, ":restaurantId")
		o.Scopes = r.Need.names
	}
	return o
}

// chain is the handler list of a route: access control, then the handler.
// A query string that does not parse is refused after authentication, so a
// request without credentials is a 401 whatever its query (spec 5.3).
func (a *API) chain(r route) []gin.HandlerFunc {
	var hs []gin.HandlerFunc
	if !r.Raw {
		hs = append(hs, a.compress)
	}
	switch r.Access {
	case accessOpen:
		hs = append(hs, a.limitOpen, a.strictQuery)
	case accessPartner:
		hs = append(hs, a.authenticate, a.strictQuery)
		if r.Need != nil {
			hs = append(hs, a.authorize(r.Need))
		}
	default:
		hs = append(hs, a.strictQuery)
	}
	h := r.Handler
	if h == nil {
		h = a.serve(r.Op)
	}
	return append(hs, a.handle(h))
}
