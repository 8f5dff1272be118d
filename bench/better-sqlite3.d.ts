// The benchmark's only use of better-sqlite3 (LangGraph's SqliteSaver runs on it); no @types package is installed.
declare module "better-sqlite3" {
  interface Database {
    pragma(source: string): unknown
    close(): void
  }
  const Database: new (filename: string) => Database
  export default Database
}
