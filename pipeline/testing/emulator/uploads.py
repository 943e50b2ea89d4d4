"""Files uploaded with a message (multipart ``files[n]`` parts), as Discord stores them.

A create or webhook execute body sent as multipart/form-data names its files in
``payload_json``'s ``attachments`` (``{"id": n, "filename", "description"}``) and sends
each as the part ``files[n]``. The message keeps one attachment object per named file
that came (``filename``, ``size``, ``content_type``, ``description``, a local ``url``);
a part named but missing is a 400, as on Discord. The bytes are kept by attachment id
(``DiscordEmulator.files``), so a test can read back what was sent, and the page shows
the picture: ``GET /attachments/{id}/{filename}`` serves them (the attachment's ``url``).
"""

from __future__ import annotations

__all__ = ("install", "uploaded")

from typing import TYPE_CHECKING, Any

from aiohttp import web

from rxcord.testing.emulator.validation import form_error

if TYPE_CHECKING:
    from rxcord.testing.emulator.app import DiscordEmulator


def install(emu: DiscordEmulator) -> None:
    """Serve the uploaded files at their attachment ``url`` (same origin: the page may load them)."""
    emu.add_plain("GET", "/attachments/{attachment_id}/{filename}", _serve)


async def _serve(emu: DiscordEmulator, request: web.Request) -> web.StreamResponse:
    data = emu.files.get(request.match_info["attachment_id"])
    if data is None:
        return web.json_response({"message": "Unknown Attachment", "code": 0}, status=404)
    name = request.match_info["filename"]
    kind = "image/png" if name.endswith(".png") else "text/plain; charset=utf-8"
    return web.Response(body=data, headers={"Content-Type": kind, "X-Content-Type-Options": "nosniff"})


async def uploaded(
    emu: DiscordEmulator, request: web.Request, payload: dict[str, Any]
) -> list[dict[str, Any]]:
    """The attachment objects of the files *request* uploaded (``[]`` for a JSON body)."""
    named = payload.get("attachments")
    if request.content_type != "multipart/form-data" or not isinstance(named, list):
        return []
    form = await request.post()  # parsed once by read_payload; aiohttp keeps it
    out: list[dict[str, Any]] = []
    for index, item in enumerate(named):
        part = form.get(f"files[{item.get('id')}]") if isinstance(item, dict) else None
        if not isinstance(part, web.FileField):
            problem = (("attachments", str(index)), "ATTACHMENT_NOT_FOUND", "Attachment data not found")
            raise form_error([problem])
        data = part.file.read()
        attachment_id = emu.store.snowflake()
        filename = str(item.get("filename") or part.filename)
        emu.files[attachment_id] = data
        out.append(
            {
                "id": attachment_id,
                "filename": filename,
                "size": len(data),
                "url": f"/attachments/{attachment_id}/{filename}",
                "proxy_url": f"/attachments/{attachment_id}/{filename}",
                "content_type": part.content_type,
                **({"description": str(item["description"])} if item.get("description") else {}),
            }
        )
    return out
