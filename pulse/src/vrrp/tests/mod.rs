mod captures;
mod machine;
mod packet;
mod settings;
mod sync;

use fulcrum_config::lexer::Options;

use super::InstanceSettings;

/// The settings of the only instance in `text`.
fn settings_of(text: &str) -> InstanceSettings {
    let options = Options {
        config_id: None,
        all_config: false,
        random_seed: Some(1),
    };
    let loaded = fulcrum_config::load_str("test.conf", text, &options);
    let [instance] = loaded.config.vrrp_instances.as_slice() else {
        panic!("one instance expected in {text}");
    };
    InstanceSettings::from_model(instance, &loaded.config.global.vrrp).unwrap()
}
