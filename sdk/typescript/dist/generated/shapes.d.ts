import type { Shapes } from "../canonical.js";
/** Wire shape of every titled object a message holds (see scripts/build.mjs, shapes()). */
export declare const shapes: Shapes;
/** The shape name of a whole message. */
export declare const MSG = "Msg";
