"""The static files storage: WhiteNoise's CompressedManifestStaticFilesStorage, hashed in DEBUG too.

Django's manifest storage hands out unhashed URLs while DEBUG is on, so `make run` (DEBUG by
default) served a 4.8 MB plotly.min.js uncompressed with `max-age=0`. Here a name that the
manifest from `collectstatic` knows is always served under its hashed name: WhiteNoise then
sends the brotli/gzip copy with a year-long, immutable cache lifetime. Without a manifest
(a checkout where collectstatic never ran, unit tests) names stay plain and the finders
serve them, as before.
"""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class KernelHubStaticFilesStorage(CompressedManifestStaticFilesStorage):
    manifest_strict = False

    def url(self, name, force=False):
        if not force and name and self.hashed_files.get(self.clean_name(name).split("?")[0]):
            force = True
        try:
            return super().url(name, force=force)
        except ValueError:  # not collected: the plain name (served by the finders)
            return self._url(lambda plain: plain, name, force=True)
