"""OData v4 (read-only) BI feed: service document, $metadata and flat entity sets."""
