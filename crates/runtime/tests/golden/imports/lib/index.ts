// Imported as "./lib": the directory's index.
export * from "./labels";
export { fmt as format } from "./format.js";
export { default as defaults } from "../defaults.json";
