import { simulationSuite } from "./suite.ts"

simulationSuite("memory")
