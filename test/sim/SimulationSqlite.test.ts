import { simulationSuite } from "./suite.ts"

simulationSuite("sqlite")
