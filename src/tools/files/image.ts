import { imageSize } from "image-size";
import type { ImageMediaType } from "../../protocol/types.js";
import { ToolError } from "../errors.js";

/**
 * Images a model may be sent: PNG, JPEG, GIF and WebP, known by their header (a name alone
 * proves nothing), within limits checked before anything is stored or sent. A larger image is
 * refused with the limit named, never resized: what the model sees is exactly the file.
 */

export const IMAGE_MAX_BYTES = 5 * 1024 * 1024;
export const IMAGE_MAX_SIDE = 8000;

/** Names read_file treats as images (the header must then say the same). */
const IMAGE_EXTENSIONS = /\.(png|jpe?g|gif|webp)$/i;

const MEDIA_TYPES: Readonly<Record<string, ImageMediaType>> = {
  png: "image/png",
  jpg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
};

export function isImagePath(path: string): boolean {
  return IMAGE_EXTENSIONS.test(path);
}

export interface ImageFacts {
  media_type: ImageMediaType;
  width: number;
  height: number;
}

/** The bytes' format and size from their header, or a ToolError naming what is wrong. */
export function imageFacts(bytes: Uint8Array, shown: string): ImageFacts {
  if (bytes.byteLength > IMAGE_MAX_BYTES) throw tooLarge(shown, bytes.byteLength);
  let size: { type?: string | undefined; width?: number | undefined; height?: number | undefined };
  try {
    size = imageSize(bytes);
  } catch {
    throw new ToolError(
      "SEMANTIC_VALIDATION_ERROR",
      `${shown} is not a PNG, JPEG, GIF or WebP image harness can read (its header is not one)`,
    );
  }
  const media = size.type === undefined ? undefined : MEDIA_TYPES[size.type];
  if (
    media === undefined ||
    size.width === undefined ||
    size.height === undefined ||
    size.width < 1 ||
    size.height < 1
  ) {
    throw new ToolError(
      "SEMANTIC_VALIDATION_ERROR",
      `${shown} is ${size.type === undefined ? "not an image harness reads" : `a ${size.type} image`}; only PNG, JPEG, GIF and WebP images are sent to a model`,
    );
  }
  if (size.width > IMAGE_MAX_SIDE || size.height > IMAGE_MAX_SIDE) {
    throw new ToolError(
      "OUTPUT_LIMIT",
      `${shown} is ${size.width}x${size.height} pixels, over the limit of ${IMAGE_MAX_SIDE} pixels a side; images are never resized: crop or scale it yourself and read that file`,
    );
  }
  return { media_type: media, width: size.width, height: size.height };
}

export function tooLarge(shown: string, bytes: number): ToolError {
  return new ToolError(
    "OUTPUT_LIMIT",
    `${shown} is ${bytes} bytes, over the image limit of ${IMAGE_MAX_BYTES} bytes (5 MB); images are never resized: make a smaller file and read that`,
  );
}
