"""KernelHub's public API: REST (/api/v1/), OData v4 BI feed (/odata/), exports, reward service."""
