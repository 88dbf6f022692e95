//! `anygrad devices`: every adapter wgpu can open (GL duplicates skipped, best first), with
//! the facts a user needs to choose one: backend, driver, limits, f16, subgroups, timestamps,
//! float atomics, cooperative-matrix shapes.

use anygrad::gpu;

/// Print the adapter list as a table or JSON.
pub fn run(json: bool) -> Result<(), String> {
    let adapters = gpu::adapter_infos();
    if json {
        for adapter in &adapters {
            println!(
                "{}",
                serde_json::to_string(adapter).map_err(|e| e.to_string())?
            );
        }
        return Ok(());
    }
    println!("cpu: always available (reference backend)");
    if adapters.is_empty() {
        println!("no GPU adapter found: install a Vulkan driver (Linux: mesa-vulkan-drivers libvulkan1, or your vendor's driver), or set VK_DRIVER_FILES to its ICD file; run `anygrad doctor` for details");
        return Ok(());
    }
    for (index, adapter) in adapters.iter().enumerate() {
        let value = serde_json::to_value(adapter).map_err(|e| e.to_string())?;
        println!("gpu:{index}");
        if let serde_json::Value::Object(fields) = value {
            for (key, field) in fields {
                let text = match field {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                println!("  {key:<32} {text}");
            }
        }
    }
    Ok(())
}
