"""The CSDL XML document (`$metadata`) describing the entity sets of `flat.py`."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from kernelhub.api.flat import ENTITY_SETS

EDMX_NS = "http://docs.oasis-open.org/odata/ns/edmx"
EDM_NS = "http://docs.oasis-open.org/odata/ns/edm"
NAMESPACE = "KernelHub"
CONTAINER = "KernelHubContainer"


def metadata_xml() -> bytes:
    ET.register_namespace("edmx", EDMX_NS)
    root = ET.Element(f"{{{EDMX_NS}}}Edmx", {"Version": "4.0"})
    services = ET.SubElement(root, f"{{{EDMX_NS}}}DataServices")
    schema = ET.SubElement(services, "Schema", {"xmlns": EDM_NS, "Namespace": NAMESPACE})
    for entity in ENTITY_SETS.values():
        entity_type = ET.SubElement(schema, "EntityType", {"Name": entity.type_name})
        key = ET.SubElement(entity_type, "Key")
        ET.SubElement(key, "PropertyRef", {"Name": entity.key})
        for column in entity.columns:
            attrs = {"Name": column.name, "Type": column.edm}
            if not column.nullable:
                attrs["Nullable"] = "false"
            if column.edm == "Edm.DateTimeOffset":
                attrs["Precision"] = "3"
            ET.SubElement(entity_type, "Property", attrs)
    container = ET.SubElement(schema, "EntityContainer", {"Name": CONTAINER})
    for entity in ENTITY_SETS.values():
        ET.SubElement(container, "EntitySet",
                      {"Name": entity.name, "EntityType": f"{NAMESPACE}.{entity.type_name}"})
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
